// The server serves `/ui/duration.js` from the source of @lango/duration's `readDuration` (ADR 0013).
export { readDuration } from '@lango/duration'
