export { FakeClock } from './fake-clock.js'
export { type EventSource, nextEvent } from './next-event.js'
export {
  FakeAgentRunner,
  type FakeAgentRunnerOptions,
  type RecordedRun,
  RecordingAgentRunner,
  type RecordingAgentRunnerOptions,
} from './recording-agent-runner.js'
export {
  type RecordedNotice,
  RecordingChannelSender,
  type RecordingChannelSenderOptions,
  RecordingNotifier,
  type RecordingNotifierOptions,
} from './recording-channel-sender.js'
