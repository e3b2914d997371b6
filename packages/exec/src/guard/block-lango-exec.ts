import { ExecError } from '../errors.js'
import { refuseUnknownKeys } from '../option-keys.js'
import {
  findLangoInvocation,
  type LangoFindingReason,
  MAX_GUARD_INPUT_LENGTH,
} from './find-lango-invocation.js'

/** Automation features whose tools can be switched off in Settings. */
export type AutomationFeature = 'cron' | 'background' | 'workflow'

/** Which automation features are on: `true`/`false` for all of them, or one flag each (missing = off). */
export type AutomationAvailability = boolean | { readonly [feature in AutomationFeature]?: boolean }

/** Options of {@link blockLangoExec} and {@link langoExecMessage}. */
export interface BlockLangoExecOptions {
  /** Picks between "use these tools" and "enable the feature in Settings" for cron, bg and workflow. */
  readonly automationAvailable: AutomationAvailability
}

/** Why a command was blocked; see {@link LangoFindingReason} for each value. */
export type LangoBlockReason = LangoFindingReason

/**
 * The guard's verdict on a command line. Phase 1: a known subcommand with its own guidance;
 * phase 2: any other lango invocation (or a command the guard refuses to analyse).
 */
export type LangoExecClassification =
  | { readonly verdict: 'allow' }
  | {
      readonly verdict: 'block'
      readonly phase: 1 | 2
      /** The known subcommand (lower case, as in {@link LANGO_SUBCOMMAND_GUIDANCE}); phase 1 only. */
      readonly subcommand?: string
      readonly reason: LangoBlockReason
    }

/** Guidance for one lango subcommand (or a set of aliases). */
export interface LangoSubcommandGuidance {
  /** Subcommand names in lower case; the first is the canonical one. */
  readonly subcommands: readonly string[]
  /**
   * `automation`: built-in tools behind a feature flag; `tools`: built-in tools that are always there;
   * `terminal`: no built-in equivalent, so the user has to run it.
   */
  readonly kind: 'automation' | 'tools' | 'terminal'
  /** The feature flag of an `automation` entry. */
  readonly feature?: AutomationFeature
  /** Name used in messages, e.g. `Cron` ("enable Cron in Settings"). */
  readonly label: string
  /** Built-in tools that do what the subcommand does. */
  readonly tools: readonly string[]
}

/** Phase-1 guidance, one row per subcommand family. The single place tool names are listed. */
export const LANGO_SUBCOMMAND_GUIDANCE: readonly LangoSubcommandGuidance[] = Object.freeze([
  {
    subcommands: ['cron'],
    kind: 'automation',
    feature: 'cron',
    label: 'Cron',
    tools: ['cron_add', 'cron_list', 'cron_pause', 'cron_resume', 'cron_remove', 'cron_history'],
  },
  {
    subcommands: ['bg', 'background'],
    kind: 'automation',
    feature: 'background',
    label: 'Background Tasks',
    tools: ['bg_submit', 'bg_status', 'bg_list', 'bg_result', 'bg_cancel'],
  },
  {
    subcommands: ['workflow'],
    kind: 'automation',
    feature: 'workflow',
    label: 'Workflow',
    tools: [
      'workflow_run',
      'workflow_status',
      'workflow_list',
      'workflow_cancel',
      'workflow_rerun',
      'workflow_save',
    ],
  },
  {
    subcommands: ['graph'],
    kind: 'tools',
    label: 'knowledge graph',
    tools: ['graph_traverse', 'graph_query', 'rag_retrieve'],
  },
  {
    subcommands: ['memory'],
    kind: 'tools',
    label: 'memory',
    tools: ['memory_list_observations', 'memory_list_reflections'],
  },
  {
    subcommands: ['p2p'],
    kind: 'tools',
    label: 'P2P',
    tools: [
      'p2p_status',
      'p2p_connect',
      'p2p_disconnect',
      'p2p_peers',
      'p2p_query',
      'p2p_discover',
      'p2p_firewall_rules',
      'p2p_firewall_add',
      'p2p_firewall_remove',
      'p2p_reputation',
      'p2p_pay',
      'p2p_price_query',
    ],
  },
  {
    subcommands: ['security'],
    kind: 'tools',
    label: 'security and secrets',
    tools: [
      'crypto_encrypt',
      'crypto_decrypt',
      'crypto_sign',
      'crypto_hash',
      'crypto_keys',
      'secrets_store',
      'secrets_get',
      'secrets_list',
      'secrets_delete',
    ],
  },
  {
    subcommands: ['payment'],
    kind: 'tools',
    label: 'payment',
    tools: ['payment_send', 'payment_create_wallet', 'payment_x402_fetch'],
  },
  { subcommands: ['config'], kind: 'terminal', label: 'configuration', tools: [] },
  { subcommands: ['doctor'], kind: 'terminal', label: 'diagnostics', tools: [] },
  { subcommands: ['settings'], kind: 'terminal', label: 'settings', tools: [] },
  { subcommands: ['serve'], kind: 'terminal', label: 'server', tools: [] },
  { subcommands: ['onboard'], kind: 'terminal', label: 'onboarding', tools: [] },
  { subcommands: ['agent'], kind: 'terminal', label: 'agent', tools: [] },
] satisfies LangoSubcommandGuidance[])

const GUIDANCE_BY_SUBCOMMAND: ReadonlyMap<string, LangoSubcommandGuidance> = new Map(
  LANGO_SUBCOMMAND_GUIDANCE.flatMap((entry) => entry.subcommands.map((name) => [name, entry] as const)),
)

const BLOCKED = 'Blocked: do not run the lango CLI through exec.'

const PASSPHRASE =
  'Every lango CLI command needs passphrase authentication during bootstrap, which fails in a ' +
  'non-interactive subprocess like this one.'

const ASK_USER = 'ask the user to run the command directly in their terminal.'

/**
 * Classifies a command line: `allow`, or `block` with the phase, the known subcommand and the reason.
 * Case-insensitive; sees lango anywhere bash would run it (SECURITY.md §6.2). Use this to branch
 * without matching message strings.
 *
 * @example
 * classifyLangoExec('cd /tmp && sudo lango cron list')
 * // → { verdict: 'block', phase: 1, subcommand: 'cron', reason: 'command' }
 * classifyLangoExec('cat lango.yaml') // { verdict: 'allow' }
 */
export function classifyLangoExec(command: string): LangoExecClassification {
  if (typeof command !== 'string')
    throw new ExecError(
      'EXEC_INVALID_OPTION',
      `the lango CLI guard takes the command line as a string, got ${describeValue(command)}`,
    )
  const known = recentVerdicts.get(command)
  if (known !== undefined) return known
  const verdict = Object.freeze(classify(command))
  if (command.length <= MAX_REMEMBERED_LENGTH) {
    if (recentVerdicts.size >= MAX_REMEMBERED)
      recentVerdicts.delete(recentVerdicts.keys().next().value as string)
    recentVerdicts.set(command, verdict)
  }
  return verdict
}

/**
 * Verdicts of recent commands: the verdict is a pure function of the text, and the commands of
 * cron jobs and workflow steps come back on every run, each otherwise parsed again. Bounded in
 * count and in the length of a remembered command; the oldest is forgotten first.
 */
const recentVerdicts = new Map<string, LangoExecClassification>()
const MAX_REMEMBERED = 512
const MAX_REMEMBERED_LENGTH = 4096

function classify(command: string): LangoExecClassification {
  const finding = findLangoInvocation(command)
  if (finding === undefined) return { verdict: 'allow' }
  const subcommand = finding.subcommand
  if (subcommand !== undefined && GUIDANCE_BY_SUBCOMMAND.has(subcommand)) {
    return { verdict: 'block', phase: 1, subcommand, reason: finding.reason }
  }
  return { verdict: 'block', phase: 2, reason: finding.reason }
}

/**
 * The guidance message for a classification: `''` for `allow`. Messages are fixed texts: they never
 * contain the command, so a secret in it cannot leak through them.
 */
export function langoExecMessage(
  classification: LangoExecClassification,
  options: BlockLangoExecOptions,
): string {
  checkMessageKeys(options)
  if (classification.verdict === 'allow') return ''
  checkAvailability(options)
  switch (classification.reason) {
    case 'too-long':
      return (
        `Blocked: the command is longer than the ${MAX_GUARD_INPUT_LENGTH / 1024} KiB the lango CLI guard ` +
        'checks, so it was not run. Split it into smaller commands.'
      )
    case 'too-complex':
      return (
        'Blocked: the command nests shells, eval or runners deeper than the lango CLI guard follows, ' +
        'so it was not run. Simplify the command.'
      )
  }
  const guidance =
    classification.subcommand === undefined
      ? undefined
      : GUIDANCE_BY_SUBCOMMAND.get(classification.subcommand)
  if (guidance === undefined)
    return `${BLOCKED} ${PASSPHRASE}${reasonNote(classification.reason)} ${catchAll()}`
  const tools = guidance.tools.join(', ')
  switch (guidance.kind) {
    case 'automation':
      if (guidance.feature !== undefined && !isAvailable(options.automationAvailable, guidance.feature)) {
        return (
          `${BLOCKED} ${PASSPHRASE} The built-in ${guidance.label} tools (${tools}) are turned off: ` +
          `ask the user to enable ${guidance.label} in Settings, then use those tools.`
        )
      }
      return `${BLOCKED} Use the built-in ${guidance.label} tools instead: ${tools}. ${PASSPHRASE}`
    case 'tools':
      return `${BLOCKED} Use the built-in ${guidance.label} tools instead: ${tools}. ${PASSPHRASE}`
    case 'terminal':
      return `${BLOCKED} ${PASSPHRASE} No built-in tool covers the ${guidance.label} command: ${ASK_USER}`
  }
}

/**
 * The CLI guard: `''` to allow `command`, else the guidance message to return instead of running it.
 * Run it on the unresolved command (before secret references are resolved), in every exec entry point.
 *
 * @example
 * blockLangoExec('lango cron list', { automationAvailable: false })
 * // → '… ask the user to enable Cron in Settings, then use those tools.'
 */
export function blockLangoExec(command: string, options: BlockLangoExecOptions): string {
  checkGuardKeys(options)
  checkAvailability(options)
  return langoExecMessage(classifyLangoExec(command), options)
}

const checkGuardKeys = refuseUnknownKeys('blockLangoExec options', ['automationAvailable'])
const checkMessageKeys = refuseUnknownKeys('langoExecMessage options', ['automationAvailable'])

/**
 * `options.automationAvailable` is `true`/`false` or an object of per-feature booleans (a feature
 * left out or `undefined` is off); anything else would silently read as "off" and point the agent
 * to Settings: `EXEC_INVALID_OPTION`.
 */
function checkAvailability(options: BlockLangoExecOptions): void {
  const availability = (options as Partial<BlockLangoExecOptions> | null | undefined)?.automationAvailable
  if (typeof availability === 'boolean') return
  if (typeof availability === 'object' && availability !== null && !Array.isArray(availability)) {
    const wrong = Object.entries(availability).find(
      ([feature, on]) =>
        !FEATURES.includes(feature as AutomationFeature) || (typeof on !== 'boolean' && on !== undefined),
    )
    if (wrong === undefined) return
    throw new ExecError(
      'EXEC_INVALID_OPTION',
      `automationAvailable.${wrong[0]} is not accepted: expected an object of ${FEATURES.join(', ')}, each true, false or left out`,
    )
  }
  throw new ExecError(
    'EXEC_INVALID_OPTION',
    `automationAvailable must be true, false or an object { cron?, background?, workflow? } of booleans, got ${describeValue(availability)}`,
  )
}

const FEATURES: readonly AutomationFeature[] = ['cron', 'background', 'workflow']

function describeValue(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value === 'string' ? 'a string' : `${typeof value}`
}

function catchAll(): string {
  return `Use a built-in tool for the task if one exists; otherwise ${ASK_USER}`
}

function reasonNote(reason: LangoBlockReason): string {
  switch (reason) {
    case 'ambiguous':
      return (
        ' The program name is only known at run time and the command names lango, so it is treated as ' +
        'a lango call.'
      )
    case 'parse-error':
      return ' The command could not be parsed as shell and one of its words is lango.'
    case 'function':
      return ' Defining a shell function named lango counts as a lango call.'
    default:
      return ''
  }
}

function isAvailable(availability: AutomationAvailability, feature: AutomationFeature): boolean {
  return typeof availability === 'boolean' ? availability : availability[feature] === true
}
