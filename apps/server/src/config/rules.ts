import { formatDuration as formatExactDuration, readDuration } from '@lango/duration'
import type { ApprovalPolicy } from '@lango/tools'
import type { ServerConfig } from './types.js'

/**
 * How one configuration value is checked and converted. `parse` returns `undefined` for an invalid
 * input; `expected` then says what is accepted. A `sensitive` value (token, API key, URL) is never
 * quoted back in a message.
 */
export interface Rule<T> {
  readonly expected: string
  readonly sensitive?: boolean
  parse(input: unknown): T | undefined
  /**
   * For a valid input in a form that is still read but on its way out: what to write instead, as a
   * warning (the server starts). `undefined` when the form is current.
   */
  deprecated?(input: unknown): string | undefined
}

const SECOND = 1000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR
const KIB = 1024
const MIB = 1024 * KIB
const GIB = 1024 * MIB

/** Describes what was received, for `…, got X`; sensitive values are described by kind only. */
export function describeInput(input: unknown, sensitive = false): string {
  if (input === null || input === undefined) return 'nothing'
  if (Array.isArray(input)) return 'a list'
  if (typeof input === 'object') return 'a mapping'
  if (sensitive) return typeof input === 'string' ? 'a value (not shown)' : `a ${typeof input}`
  if (typeof input === 'string') {
    const shown = input.length > 40 ? `${input.slice(0, 40)}…` : input
    return JSON.stringify(shown)
  }
  return String(input)
}

/** The full message for an invalid input: `expected …, got …`. */
export function invalidMessage(rule: Rule<unknown>, input: unknown): string {
  return `${rule.expected}, got ${describeInput(input, rule.sensitive)}`
}

/** An integer from `min` to `max`. YAML numbers only; environment text is converted by the caller. */
export function integer(min: number, max: number): Rule<number> {
  return {
    expected: `expected an integer from ${min} to ${max}`,
    parse: (input) =>
      typeof input === 'number' && Number.isInteger(input) && input >= min && input <= max
        ? input
        : undefined,
  }
}

/** An amount of US dollars from `min` (exclusive when `above`) to `max`: `0.15`, `2.5`. */
export function dollars(min: number, max: number, above = false): Rule<number> {
  return {
    expected: `expected an amount of US dollars ${above ? 'above' : 'from'} ${min}${above ? ' and at most' : ' to'} ${max}, such as 0.15`,
    parse: (input) =>
      typeof input === 'number' &&
      Number.isFinite(input) &&
      (above ? input > min : input >= min) &&
      input <= max
        ? input
        : undefined,
  }
}

export const boolean: Rule<boolean> = {
  expected: 'expected true or false',
  parse: (input) => (typeof input === 'boolean' ? input : undefined),
}

/** One of fixed words. */
function oneOf<const T extends string>(values: readonly T[]): Rule<T> {
  return {
    expected: `expected one of ${values.join(', ')}`,
    parse: (input) => (values.includes(input as T) ? (input as T) : undefined),
  }
}

export const approvalPolicy: Rule<ApprovalPolicy> = oneOf(['all', 'dangerous', 'moderate', 'none'])

export const logLevel: Rule<ServerConfig['logging']['level']> = oneOf([
  'trace',
  'debug',
  'info',
  'warn',
  'error',
  'fatal',
  'silent',
])

export const inherit: Rule<ServerConfig['exec']['inherit']> = oneOf(['core', 'all'])

/** A token or API key: non-empty, no whitespace or control characters (they would break a header). */
export const secret: Rule<string> = {
  expected: 'expected a non-empty token without spaces or control characters',
  sensitive: true,
  parse: (input) => (typeof input === 'string' && /^[^\s\p{Cc}]+$/u.test(input) ? input : undefined),
}

/** An HTTP header value that may be a credential (`Bearer …`): at most 4,096 characters, no control characters. */
export const headerValue: Rule<string> = {
  expected: 'expected a header value of 1 to 4096 characters without control characters',
  sensitive: true,
  parse: (input) =>
    typeof input === 'string' && input.length > 0 && input.length <= 4096 && !/\p{Cc}/u.test(input)
      ? input
      : undefined,
}

/**
 * OpenTelemetry's `OTEL_EXPORTER_OTLP_HEADERS` form: `name=value` pairs separated by commas, each
 * value percent-decoded (the specification's W3C-baggage-like format), at most 20. Sensitive: the
 * values are credentials.
 */
export const otlpHeaderList: Rule<Readonly<Record<string, string>>> = {
  expected: 'expected name=value pairs separated by commas (at most 20; values percent-encoded)',
  sensitive: true,
  parse: (input) => {
    if (typeof input !== 'string') return undefined
    const headers: Record<string, string> = {}
    const pairs = input.split(',').filter((pair) => pair.trim() !== '')
    if (pairs.length === 0 || pairs.length > 20) return undefined
    for (const pair of pairs) {
      const at = pair.indexOf('=')
      if (at <= 0) return undefined
      const name = pair.slice(0, at).trim()
      let value: string
      try {
        value = decodeURIComponent(pair.slice(at + 1).trim())
      } catch {
        return undefined
      }
      if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/.test(name) || headerValue.parse(value) === undefined)
        return undefined
      headers[name.toLowerCase()] = value
    }
    return headers
  },
}

/** The samplers of OpenTelemetry's `OTEL_TRACES_SAMPLER` this server has (the SDK's own). */
export const TRACE_SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const

export const traceSampler: Rule<(typeof TRACE_SAMPLERS)[number]> = oneOf(TRACE_SAMPLERS)

/** `OTEL_TRACES_EXPORTER`: OTLP, or none (spans are exported nowhere). */
export const traceExporter: Rule<'otlp' | 'none'> = {
  expected: 'expected otlp or none (the trace exporters this server has)',
  parse: (input) => (input === 'otlp' || input === 'none' ? input : undefined),
}

/**
 * `OTEL_EXPORTER_OTLP_PROTOCOL`: the exporter sends OTLP as JSON over HTTP, and nothing else (`grpc`
 * and `http/protobuf` would need another exporter package).
 */
export const otlpProtocol: Rule<'http/json'> = {
  expected:
    'expected http/json (traces are sent as OTLP JSON over HTTP; grpc and http/protobuf are not supported)',
  parse: (input) => (input === 'http/json' ? input : undefined),
}

/** A probability: `OTEL_TRACES_SAMPLER_ARG` of the trace-ID ratio samplers. */
export const ratio: Rule<number> = {
  expected: 'expected a number from 0 to 1, such as 0.25',
  parse: (input) =>
    typeof input === 'number' && Number.isFinite(input) && input >= 0 && input <= 1 ? input : undefined,
}

/** `OTEL_EXPORTER_OTLP_TIMEOUT`: whole milliseconds, as OpenTelemetry's variables give them. */
export function milliseconds(min: number, max: number): Rule<number> {
  return {
    expected: `expected a whole number of milliseconds from ${min} to ${max}, such as 10000`,
    parse: (input) =>
      typeof input === 'number' && Number.isInteger(input) && input >= min && input <= max
        ? input
        : undefined,
  }
}

/** A resource attribute's key: printable ASCII without spaces, commas or `=`, at most 255 characters. */
export const RESOURCE_ATTRIBUTE_KEY = /^[!-+\--<>-~]{1,255}$/

/** A resource attribute's value: at most 255 characters, no control characters. */
export const resourceAttributeValue: Rule<string> = {
  expected: 'expected a value of at most 255 characters without control characters',
  parse: (input) =>
    typeof input === 'string' && input.length <= 255 && !/\p{Cc}/u.test(input) ? input : undefined,
}

/**
 * OpenTelemetry's `OTEL_RESOURCE_ATTRIBUTES` form: `key=value` pairs separated by commas, each value
 * percent-decoded, at most 64.
 */
export const resourceAttributeList: Rule<Readonly<Record<string, string>>> = {
  expected:
    'expected key=value pairs separated by commas (at most 64; keys of printable ASCII, values of at most 255 characters, percent-encoded)',
  parse: (input) => {
    if (typeof input !== 'string') return undefined
    const attributes: Record<string, string> = {}
    const pairs = input.split(',').filter((pair) => pair.trim() !== '')
    if (pairs.length === 0 || pairs.length > 64) return undefined
    for (const pair of pairs) {
      const at = pair.indexOf('=')
      if (at <= 0) return undefined
      const key = pair.slice(0, at).trim()
      let value: string
      try {
        value = decodeURIComponent(pair.slice(at + 1).trim())
      } catch {
        return undefined
      }
      if (!RESOURCE_ATTRIBUTE_KEY.test(key) || resourceAttributeValue.parse(value) === undefined)
        return undefined
      attributes[key] = value
    }
    return attributes
  },
}

/** The vault's passphrase: any text (spaces allowed), at most 1,024 characters, no control characters. */
export const passphrase: Rule<string> = {
  expected: 'expected a passphrase of 1 to 1024 characters without control characters',
  sensitive: true,
  parse: (input) =>
    typeof input === 'string' && input.length > 0 && input.length <= 1024 && !/\p{Cc}/u.test(input)
      ? input
      : undefined,
}

export const name: Rule<string> = {
  expected: 'expected a non-empty name of at most 200 characters',
  parse: (input) =>
    typeof input === 'string' && input.trim().length > 0 && input.length <= 200 ? input : undefined,
}

/** A host name or IP address to listen on; IPv6 brackets are removed (`[::1]` → `::1`). */
export const host: Rule<string> = {
  expected: 'expected a host name or IP address such as 127.0.0.1, ::1, localhost or 0.0.0.0',
  parse: (input) => {
    if (typeof input !== 'string') return undefined
    const bare = /^\[[^\]]*\]$/.test(input) ? input.slice(1, -1) : input
    return bare.length <= 253 && /^[A-Za-z0-9._%:-]+$/.test(bare) ? bare : undefined
  },
}

/**
 * A name a `Host` header may carry: `name` (any port) or `name:port`, an IPv6 address in brackets;
 * lowercased, as the `/mcp` guard compares it.
 */
export const hostHeader: Rule<string> = {
  expected:
    'expected a host name as clients write it, such as lango.example.com, lango.example.com:7878 or [fd00::1]:7878',
  parse: (input) => {
    if (typeof input !== 'string' || input.length > 260) return undefined
    const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)(?::(\d{1,5}))?$/.exec(
      input,
    )
    if (match === null || (match[2] !== undefined && Number(match[2]) > 65_535)) return undefined
    return input.toLowerCase()
  },
}

/** An `http(s)://` URL, returned as given. Sensitive: a URL may carry credentials. */
export const httpUrl: Rule<string> = {
  expected: 'expected an http:// or https:// URL',
  sensitive: true,
  parse: (input) => {
    if (typeof input !== 'string') return undefined
    const url = URL.parse(input)
    return url !== null && (url.protocol === 'http:' || url.protocol === 'https:') ? input : undefined
  },
}

/** A browser origin, normalised to `scheme://host[:port]`. */
export const origin: Rule<string> = {
  expected: 'expected an origin such as https://app.example.com (scheme, host and port only)',
  parse: (input) => {
    if (typeof input !== 'string') return undefined
    const url = URL.parse(input)
    if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) return undefined
    if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') return undefined
    if (url.pathname !== '/' || input.endsWith('//')) return undefined
    return url.origin
  },
}

/**
 * A delivery target: a channel name, alone or with a chat — `telegram`, `telegram:<chat>`,
 * `slack:<channel>`, `discord:<channel>`, `webhook`, `log`, or a custom channel's `<name>:<id>`.
 * Whether the channel is configured is checked when a result is delivered (and by `lango doctor`).
 */
export const deliveryTarget: Rule<string> = {
  expected:
    'expected a delivery target such as telegram, telegram:<chat id>, slack:<channel>, discord:<channel>, webhook, log or <custom channel>:<id>',
  parse: (input) =>
    typeof input === 'string' && input.length <= 256 && /^[a-z][a-z0-9_-]{0,31}(?::\S+)?$/.test(input)
      ? input
      : undefined,
}

/** A Telegram chat id (`123456`, `-1001234567890` for groups and channels), as text. */
export const chatId: Rule<string> = {
  expected: 'expected a Telegram chat id such as 123456789 or -1001234567890',
  parse: (input) => {
    const text = typeof input === 'number' && Number.isSafeInteger(input) ? String(input) : input
    return typeof text === 'string' && /^-?\d{1,20}$/.test(text.trim()) ? text.trim() : undefined
  },
}

/** A Slack or Discord channel id (`C0123ABC`, `123456789012345678`). */
export const channelId: Rule<string> = {
  expected: 'expected a channel id such as C0123ABCD (Slack) or 123456789012345678 (Discord)',
  parse: (input) => {
    const text = typeof input === 'number' && Number.isSafeInteger(input) ? String(input) : input
    return typeof text === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(text) ? text : undefined
  },
}

/** A custom channel's name: what delivery targets and session keys start with. */
/** Names a custom channel cannot take: the built-in channels and the server's own sessions. */
export const RESERVED_CHANNEL_NAMES: readonly string[] = [
  'telegram',
  'slack',
  'discord',
  'webhook',
  'log',
  'http',
  'openai',
  'cron',
  'bg',
  'background',
  'workflow',
  'cli',
  'mcp',
]

export const channelName: Rule<string> = {
  expected: `expected a channel name of lowercase letters, digits, _ or - (starting with a letter, at most 32) other than the server's own (${RESERVED_CHANNEL_NAMES.join(', ')})`,
  parse: (input) =>
    typeof input !== 'string' ||
    !/^[a-z][a-z0-9_-]{0,31}$/.test(input) ||
    RESERVED_CHANNEL_NAMES.includes(input)
      ? undefined
      : input,
}

/** A variable-name glob for the exec environment policy (`*` is the only wildcard). */
export const envGlob: Rule<string> = {
  expected: 'expected a variable name or glob such as MY_APP_* (letters, digits, _ and *)',
  parse: (input) =>
    typeof input === 'string' && input.length <= 128 && /^[A-Za-z_*][A-Za-z0-9_*]*$/.test(input)
      ? input
      : undefined,
}

/** A file or directory path, not yet resolved (see `resolvePath`). */
export const path: Rule<string> = {
  expected: 'expected a path',
  parse: (input) =>
    typeof input === 'string' && input.length > 0 && input.length <= 4096 && !input.includes('\0')
      ? input
      : undefined,
}

/** An IANA time zone, returned in its canonical spelling (`utc` → `UTC`). */
export const timezone: Rule<string> = {
  expected: 'expected an IANA time zone such as UTC, Europe/Berlin or America/New_York',
  parse: (input) => {
    if (typeof input !== 'string' || input.length === 0 || input.length > 64) return undefined
    try {
      return new Intl.DateTimeFormat('en-US', { timeZone: input }).resolvedOptions().timeZone
    } catch {
      return undefined
    }
  },
}

/** The database: `postgres://…`/`postgresql://…`, `sqlite:<path>`, or a bare SQLite file path (unresolved). */
export const databaseUrl: Rule<{ kind: 'sqlite' | 'postgres'; url: string }> = {
  expected: 'expected postgres://…, postgresql://…, sqlite:<path> or a SQLite file path',
  sensitive: true,
  parse: (input) => {
    if (typeof input !== 'string' || input.length === 0 || input.includes('\0')) return undefined
    if (/^postgres(?:ql)?:\/\//i.test(input)) {
      const url = URL.parse(input)
      return url !== null && url.hostname !== '' ? { kind: 'postgres', url: input } : undefined
    }
    // `postgres:/host/db` (a slash short) or `postgres:host` is a mistyped URL, never a file name:
    // taken for one, the server would run alone on a new, empty SQLite file.
    if (/^postgres(?:ql)?:/i.test(input)) return undefined
    const sqlite = /^sqlite:(?:\/\/)?(.*)$/i.exec(input)
    if (sqlite) return sqlite[1] === '' ? undefined : { kind: 'sqlite', url: sqlite[1] as string }
    // Any other scheme (mysql://, http://) is a mistake, not a file name.
    if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(input)) return undefined
    return { kind: 'sqlite', url: input }
  },
}

/** A number of milliseconds without a unit: a YAML number, or digits in a text. */
function bareMilliseconds(input: unknown): number | undefined {
  if (typeof input === 'number') return Number.isSafeInteger(input) && input >= 0 ? input : undefined
  return typeof input === 'string' && /^\d{1,16}$/.test(input) && Number.isSafeInteger(Number(input))
    ? Number(input)
    : undefined
}

/**
 * Milliseconds from a duration in the one grammar of ADR 0013 (`90s`, `5m`, `1h30m`, `1.5h`, `2d`,
 * `250ms`). A bare number (`45000`) is the older form of this file: still milliseconds, as it always
 * was here, and deprecated (see {@link duration}).
 */
function parseDuration(input: unknown): number | undefined {
  const bare = bareMilliseconds(input)
  if (bare !== undefined) return bare
  if (typeof input !== 'string') return undefined
  const reading = readDuration(input)
  return reading.ok ? reading.milliseconds : undefined
}

/** `86400000` → `1d`, `90000` → `90s`: the largest unit that divides it. */
export function formatDuration(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    const size = { d: DAY, h: HOUR, m: MINUTE, s: SECOND }[unit]
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`
  }
  return `${ms}ms`
}

/**
 * A duration from `min` to `max` milliseconds (inclusive), with a unit. A bare number is still read
 * as milliseconds, with a deprecation warning saying what to write.
 */
export function duration(min: number, max: number): Rule<number> {
  // Examples inside the range only: a message must not suggest a value it would refuse.
  const examples = [
    ['500ms', 500],
    ['90s', 90_000],
    ['5m', 300_000],
    ['1h30m', 5_400_000],
    ['2d', 172_800_000],
  ].flatMap(([text, ms]) => ((ms as number) >= min && (ms as number) <= max ? [text as string] : []))
  const such =
    examples.length === 0
      ? ''
      : ` such as ${examples.slice(0, -1).join(', ')}${examples.length > 1 ? ' or ' : ''}${examples.at(-1)}`
  return {
    expected: `expected a duration from ${formatDuration(min)} to ${formatDuration(max)}: a number with a unit (ms, s, m, h, d or w)${such}`,
    parse: (input) => {
      const ms = parseDuration(input)
      return ms !== undefined && ms >= min && ms <= max ? ms : undefined
    },
    deprecated: (input) => {
      const bare = bareMilliseconds(input)
      if (bare === undefined) return undefined
      const written = formatExactDuration(bare)
      return `a number without a unit is read as milliseconds (${bare} = ${written}); write ${written}: a duration without a unit is deprecated and will be refused (ADR 0013)`
    },
  }
}

const SIZE_UNITS: Readonly<Record<string, number>> = {
  '': 1,
  b: 1,
  kb: 1000,
  kib: KIB,
  mb: 1000 * 1000,
  mib: MIB,
  gb: 1000 * 1000 * 1000,
  gib: GIB,
}

/** Bytes from a whole number or `512KiB`, `1MiB`, `1.5MB`, `2GiB` (units are case-insensitive). */
function parseByteSize(input: unknown): number | undefined {
  if (typeof input === 'number') return Number.isSafeInteger(input) && input >= 0 ? input : undefined
  if (typeof input !== 'string' || input.length > 32) return undefined
  const match = /^(\d+(?:\.\d+)?)\s*([A-Za-z]*)$/.exec(input)
  const unit = SIZE_UNITS[match?.[2]?.toLowerCase() ?? '-']
  if (!match || unit === undefined) return undefined
  return Math.round(Number(match[1]) * unit)
}

function formatSize(bytes: number): string {
  for (const [unit, size] of [
    ['GiB', GIB],
    ['MiB', MIB],
    ['KiB', KIB],
  ] as const) {
    if (bytes >= size && bytes % size === 0) return `${bytes / size}${unit}`
  }
  return `${bytes} bytes`
}

/** A size from `min` to `max` bytes. */
export function byteSize(min: number, max: number): Rule<number> {
  return {
    expected: `expected a size from ${formatSize(min)} to ${formatSize(max)} in bytes or such as 512KiB or 1MiB`,
    parse: (input) => {
      const bytes = parseByteSize(input)
      return bytes !== undefined && bytes >= min && bytes <= max ? bytes : undefined
    },
  }
}

export const UNITS = { SECOND, MINUTE, HOUR, DAY, KIB, MIB, GIB } as const
