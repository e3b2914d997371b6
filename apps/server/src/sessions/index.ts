export { SessionError, type SessionErrorCode } from './errors.js'
export { DEFAULT_SESSION_LIMITS, type SessionLimits } from './options.js'
export type {
  CompactionOutcome,
  CompactionSkipReason,
  ObserveOptions,
  ReflectOptions,
  SessionClock,
  SessionEvent,
  SessionObserver,
} from './ports.js'
export {
  migrateSessions,
  SESSION_MIGRATION_TABLE,
  type SessionDatabase,
  sessionMigrations,
} from './schema.js'
export {
  type ListSessionsOptions,
  type LoadedSession,
  SessionStore,
  type SessionStoreOptions,
  type SessionSummary,
  type SweepResult,
} from './session-store.js'
