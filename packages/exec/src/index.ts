export {
  type BackgroundOptions,
  BackgroundProcess,
  type BackgroundSnapshot,
  type BackgroundStatus,
  type OutputRead,
  ProcessRegistry,
  type ProcessRegistryOptions,
  type PtySettings,
  startBackground,
} from './background.js'
export {
  type BuildEnvOptions,
  type BuiltEnv,
  createEnvBuilder,
  type EnvOverrideSource,
  type EnvPolicy,
  isCredentialEnv,
} from './env.js'
export { ExecError, type ExecErrorCode } from './errors.js'
export {
  type AutomationAvailability,
  type AutomationFeature,
  type BlockLangoExecOptions,
  blockLangoExec,
  classifyLangoExec,
  LANGO_SUBCOMMAND_GUIDANCE,
  type LangoBlockReason,
  type LangoExecClassification,
  type LangoSubcommandGuidance,
  langoExecMessage,
  locateRefTokens,
  MAX_GUARD_INPUT_LENGTH,
  type RefTokenContext,
  type RefTokenKind,
  type RefTokenLocation,
} from './guard/index.js'
export { installSignalCleanup, type SignalCleanupOptions } from './host-cleanup.js'
export { closeInheritedDescriptors } from './inherited-fds.js'
export { RunLimiter, type RunLimiterOptions } from './limiter.js'
export { MemoryRefStore } from './memory-ref-store.js'
export { ensureOrphanReaper, hostRunId, killOrphans } from './orphans.js'
export type { LogFields, Logger, PtyDriver, PtyProcess, RefStore } from './ports.js'
export { silentLogger } from './ports.js'
export { checkSecretPlacement, type SpawnOptions } from './prepare.js'
export { MIN_SECRET_LENGTH, Redactor, type StreamRedactor, stripAnsi } from './redact.js'
export { type RunOptions, type RunResult, run } from './run.js'
