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
} from './block-lango-exec.js'
export { MAX_GUARD_INPUT_LENGTH } from './find-lango-invocation.js'
export {
  locateRefTokens,
  type RefTokenContext,
  type RefTokenKind,
  type RefTokenLocation,
  rewriteRefTokens,
} from './locate-tokens.js'
