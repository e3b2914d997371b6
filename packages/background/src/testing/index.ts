export { FakeAgentRunner, type FakeAgentRunnerOptions, type RecordedRun } from './fake-agent-runner.js'
export { FakeClock } from './fake-clock.js'
export { type EventSource, nextEvent } from './next-event.js'
export {
  type RecordedNotice,
  RecordingNotifier,
  type RecordingNotifierOptions,
} from './recording-notifier.js'
