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
  cleanPath,
  createEnvBuilder,
  type EnvOverrideSource,
  type EnvPolicy,
  isCredentialEnvName,
  isDeniedEnvName,
} from './env.js'
export { ExecError, type ExecErrorCode } from './errors.js'
export {
  blockLangoExec,
  classifyLangoExec,
  type LangoExecVerdict,
  locateRefTokens,
  type RefTokenLocation,
} from './guard-temp.js'
export { MemoryRefStore } from './memory-ref-store.js'
export type { ExecLogEvent, Logger, PtyDriver, PtyProcess, RefStore } from './ports.js'
export { silentLogger } from './ports.js'
export type { SpawnOptions } from './prepare.js'
export { encodedForms, Redactor, StreamRedactor, stripAnsi } from './redact.js'
export { ByteRingBuffer, type RingRead } from './ring-buffer.js'
export {
  DEFAULT_KILL_GRACE_MS,
  DEFAULT_MAX_OUTPUT_BYTES,
  DEFAULT_TIMEOUT_MS,
  type RunOptions,
  type RunResult,
  run,
} from './run.js'
