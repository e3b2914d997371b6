export { FakeClock } from './fake-clock.js'
export { MemoryCronStore } from './memory-cron-store.js'
export type { Deferred, PingHandler, RecordedPing } from './recording-runners.js'
export {
  createDeferred,
  RecordingAgentRunner,
  RecordingChannelSender,
  RecordingRunMonitor,
  RecordingShellRunner,
} from './recording-runners.js'
export { createTestJob } from './test-job.js'
