import * as v from 'valibot'
import {
  approvalPolicy,
  boolean,
  byteSize,
  channelId,
  channelName,
  chatId,
  databaseUrl,
  deliveryTarget,
  describeInput,
  dollars,
  duration,
  envGlob,
  headerValue,
  host,
  hostHeader,
  httpUrl,
  inherit,
  integer,
  invalidMessage,
  logLevel,
  name,
  origin,
  otlpProtocol,
  path,
  RESOURCE_ATTRIBUTE_KEY,
  type Rule,
  ratio,
  resourceAttributeValue,
  secret,
  timezone,
  traceExporter,
  traceSampler,
  UNITS,
} from './rules.js'

const { SECOND, HOUR, DAY, KIB, GIB } = UNITS

/**
 * One value checked by `rule`; `null` (a key with nothing after it) counts as not set. The rule
 * stays on the schema for {@link deprecatedValues}.
 */
function field<T>(rule: Rule<T>) {
  return Object.assign(v.nullish(item(rule)), { rule })
}

function item<T>(rule: Rule<T>) {
  return v.pipe(
    v.unknown(),
    v.rawTransform<unknown, T>(({ dataset, addIssue, NEVER }) => {
      const parsed = rule.parse(dataset.value)
      if (parsed === undefined) {
        addIssue({ message: invalidMessage(rule, dataset.value) })
        return NEVER
      }
      return parsed
    }),
  )
}

/** A list of values each checked by `rule`, at most `max` long. */
function list<T>(rule: Rule<T>, max: number) {
  const what = `expected a list (at most ${max}) of items each ${rule.expected.replace(/^expected /, '')}`
  // `expected` stays on the schema for the configuration reference (src/config/reference.ts).
  const schema = v.nullish(
    v.pipe(
      v.array(item(rule), (issue) => `${what}, got ${describeInput(issue.input)}`),
      v.maxLength(max, (issue) => `expected at most ${max} items, got ${issue.input.length}`),
    ),
  )
  return Object.assign(schema, { expected: what })
}

/** The message of an unknown key: names it, the closest accepted key, and every accepted key. */
export function unknownKeyMessage(key: string, accepted: readonly string[]): string {
  const shown = key.length > 64 ? `${key.slice(0, 64)}…` : key
  const close = closestKey(key, accepted)
  const hint = close === undefined ? '' : ` (did you mean ${close}?)`
  return `unknown key ${JSON.stringify(shown)}${hint}; accepted keys: ${accepted.join(', ')}`
}

/** A strict mapping: unknown keys are errors naming the accepted ones. */
function section<const TEntries extends v.ObjectEntries>(entries: TEntries) {
  const keys = Object.keys(entries)
  const expected = (input: unknown) =>
    `expected a mapping with the keys ${keys.join(', ')}, got ${describeInput(input)}`
  const mapping = v.pipe(
    v.unknown(),
    // A list is an object to JavaScript: without this, `cron: [1, 2]` reads as unknown keys 0 and 1.
    v.check(
      (input) => !Array.isArray(input),
      (issue) => expected(issue.input),
    ),
    v.strictObject(entries, (issue) =>
      // An unknown key is reported with `expected: 'never'` and the key as input.
      issue.expected === 'never' ? unknownKeyMessage(String(issue.input), keys) : expected(issue.input),
    ),
  )
  // The entries, where the walks below (unknownKeys, deprecatedValues) and SECTIONS read them.
  return v.nullish(Object.assign(mapping, { entries }))
}

const history = section({
  max_age: field(duration(HOUR, 3650 * DAY)),
  max_runs: field(integer(1, 1_000_000)),
})

/** `telemetry.otlp.headers`: header name → value (values may be credentials), at most 20. */
const otlpHeaders = v.nullish(
  v.pipe(
    v.record(
      v.pipe(
        v.string(),
        v.regex(
          /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/,
          (issue) => `expected an HTTP header name, got ${describeInput(issue.input)}`,
        ),
      ),
      item(headerValue),
      (issue) => `expected a mapping of header names to values, got ${describeInput(issue.input)}`,
    ),
    v.check((headers) => Object.keys(headers).length <= 20, 'expected at most 20 headers'),
  ),
)

/** `telemetry.resource_attributes`: attribute key → text, at most 64 (OTEL_RESOURCE_ATTRIBUTES' form as YAML). */
const resourceAttributes = v.nullish(
  v.pipe(
    v.record(
      v.pipe(
        v.string(),
        v.regex(
          RESOURCE_ATTRIBUTE_KEY,
          (issue) =>
            `expected an attribute key of printable ASCII without spaces, commas or =, got ${describeInput(issue.input)}`,
        ),
      ),
      item(resourceAttributeValue),
      (issue) => `expected a mapping of attribute keys to values, got ${describeInput(issue.input)}`,
    ),
    v.check((attributes) => Object.keys(attributes).length <= 64, 'expected at most 64 attributes'),
  ),
)

/** `models`: per model name, its price in US dollars per million input and output tokens (at most 100 models). */
const modelTable = v.nullish(
  v.pipe(
    v.record(
      v.pipe(
        v.string(),
        v.regex(/^\S{1,200}$/, (issue) => `expected a model name, got ${describeInput(issue.input)}`),
      ),
      section({
        price: section({
          input: field(dollars(0, 100_000)),
          output: field(dollars(0, 100_000)),
        }),
      }),
      (issue) =>
        `expected a mapping of model names to { price: { input, output } }, got ${describeInput(issue.input)}`,
    ),
    v.check((models) => Object.keys(models).length <= 100, 'expected at most 100 models'),
  ),
)

/** `channels.custom`: adapters loaded from modules, each `{ name, module, options? }` (at most 20). */
const customChannels = v.nullish(
  v.pipe(
    v.array(
      v.strictObject(
        {
          name: item(channelName),
          module: item(name),
          options: v.nullish(
            v.record(
              v.string(),
              v.unknown(),
              (issue) => `expected a mapping of options, got ${describeInput(issue.input)}`,
            ),
          ),
        },
        (issue) =>
          issue.expected === 'never'
            ? unknownKeyMessage(String(issue.input), ['name', 'module', 'options'])
            : `expected a mapping with name, module and (optionally) options, got ${describeInput(issue.input)}`,
      ),
      (issue) => `expected a list of custom channels, got ${describeInput(issue.input)}`,
    ),
    v.maxLength(20, (issue) => `expected at most 20 custom channels, got ${issue.input.length}`),
    v.check(
      (entries) => new Set(entries.map((entry) => entry.name)).size === entries.length,
      'custom channel names must be unique',
    ),
  ),
)

/** `lango.yaml`, snake_case as written; values converted (durations in ms, sizes in bytes), paths unresolved. */
export const fileSchema = section({
  server: section({
    host: field(host),
    port: field(integer(0, 65_535)),
    api_token: field(secret),
    body_limit: field(byteSize(KIB, GIB)),
    allowed_origins: list(origin, 100),
    allowed_hosts: list(hostHeader, 100),
  }),
  database: section({
    url: field(databaseUrl),
  }),
  cluster: section({
    lease: field(duration(SECOND, 10 * 60 * SECOND)),
  }),
  model: section({
    base_url: field(httpUrl),
    name: field(name),
    api_key: field(secret),
  }),
  agent: section({
    max_steps: field(integer(1, 1000)),
    timeout: field(duration(SECOND, DAY)),
    max_retries: field(integer(0, 10)),
    usage_max_age: field(duration(DAY, 3650 * DAY)),
    budget: section({
      max_tokens_per_turn: field(integer(1, 1_000_000_000)),
      max_cost_per_turn: field(dollars(0, 1_000_000, true)),
      max_tokens_per_day: field(integer(1, 1_000_000_000_000)),
      max_cost_per_day: field(dollars(0, 1_000_000, true)),
      max_tokens_per_creator_per_day: field(integer(1, 1_000_000_000_000)),
      max_cost_per_creator_per_day: field(dollars(0, 1_000_000, true)),
    }),
  }),
  models: modelTable,
  sessions: section({
    retention: field(duration(HOUR, 3650 * DAY)),
    max_sessions: field(integer(1, 1_000_000)),
    max_messages: field(integer(10, 100_000)),
    observe_after_messages: field(integer(4, 10_000)),
    keep_recent_messages: field(integer(1, 1_000)),
  }),
  channels: section({
    telegram: section({ token: field(secret), api_url: field(httpUrl), allowed_chats: list(chatId, 1000) }),
    slack: section({
      token: field(secret),
      api_url: field(httpUrl),
      default_channel: field(channelId),
      allowed_channels: list(channelId, 1000),
    }),
    discord: section({
      token: field(secret),
      api_url: field(httpUrl),
      default_channel: field(channelId),
      allowed_channels: list(channelId, 1000),
    }),
    webhook: section({ url: field(httpUrl), secret: field(secret) }),
    custom: customChannels,
    default_deliver_to: list(deliveryTarget, 10),
  }),
  approvals: section({
    policy: field(approvalPolicy),
    mcp_policy: field(approvalPolicy),
    timeout: field(duration(SECOND, 7 * DAY)),
    unattended: section({
      allow_dangerous: field(boolean),
      allow_cron_create: field(boolean),
    }),
  }),
  cron: section({
    enabled: field(boolean),
    timezone: field(timezone),
    min_interval: field(duration(SECOND, DAY)),
    min_agent_interval: field(duration(SECOND, DAY)),
    max_concurrent_jobs: field(integer(1, 100)),
    max_consecutive_failures: field(integer(1, 1000)),
    max_ai_tokens_per_day: field(integer(1, 1_000_000_000_000)),
    ping_private_networks: field(boolean),
    webhook_rate_limit: field(integer(1, 10_000)),
    webhook_prompt_limit: field(byteSize(KIB, 256 * KIB)),
    history,
  }),
  background: section({
    enabled: field(boolean),
    max_concurrent_tasks: field(integer(1, 100)),
    max_queued_tasks: field(integer(1, 100_000)),
    task_timeout: field(duration(SECOND, 7 * DAY)),
  }),
  workflow: section({
    enabled: field(boolean),
    directory: field(path),
    workspace: field(path),
    max_parallel: field(integer(1, 64)),
    history,
  }),
  exec: section({
    timeout: field(duration(SECOND, DAY)),
    max_timeout: field(duration(SECOND, DAY)),
    inherit: field(inherit),
    env_allow: list(envGlob, 200),
    env_deny: list(envGlob, 200),
    max_background_processes: field(integer(1, 1024)),
    max_commands: field(integer(1, 256)),
    cwd: field(path),
  }),
  logging: section({
    level: field(logLevel),
  }),
  metrics: section({
    enabled: field(boolean),
  }),
  alerts: section({
    deliver_to: list(deliveryTarget, 10),
  }),
  telemetry: section({
    enabled: field(boolean),
    service_name: field(name),
    resource_attributes: resourceAttributes,
    exporter: field(traceExporter),
    sampler: field(traceSampler),
    sampler_arg: field(ratio),
    otlp: section({
      endpoint: field(httpUrl),
      headers: otlpHeaders,
      protocol: field(otlpProtocol),
      timeout: field(duration(1, 10 * 60 * SECOND)),
    }),
  }),
})

/** The validated file, before defaults and environment overrides. */
export type FileConfig = NonNullable<v.InferOutput<typeof fileSchema>>

/** The top-level keys of `lango.yaml`. */
export const SECTIONS: readonly string[] = Object.keys(fileSchema.wrapped.entries)

interface SchemaNode {
  readonly type: string
  readonly wrapped?: SchemaNode
  readonly entries?: Readonly<Record<string, SchemaNode>>
  /** The rule of a {@link field}. */
  readonly rule?: Rule<unknown>
}

/**
 * Every own key of `value` that the schema's mappings do not accept, with the keys accepted there.
 * valibot's `strictObject` reports only the first unknown key of a mapping, and never `__proto__`
 * (yaml makes `__proto__:` an own key); this walk finds them all.
 */
export function* unknownKeys(
  value: unknown,
  schema: SchemaNode = fileSchema as SchemaNode,
  at: readonly string[] = [],
): Generator<{ readonly path: readonly string[]; readonly accepted: readonly string[] }> {
  const node = schema.type === 'nullish' && schema.wrapped !== undefined ? schema.wrapped : schema
  if (node.entries === undefined || typeof value !== 'object' || value === null || Array.isArray(value))
    return
  const entries = node.entries
  const accepted = Object.keys(entries)
  for (const key of Object.getOwnPropertyNames(value)) {
    const child = Object.hasOwn(entries, key) ? entries[key] : undefined
    if (child === undefined) yield { path: [...at, key], accepted }
    else yield* unknownKeys((value as Record<string, unknown>)[key], child, [...at, key])
  }
}

/**
 * Every value of `value` that its field's rule still reads but deprecates (a duration without a
 * unit), with what to write instead. Walks the mappings as {@link unknownKeys} does.
 */
export function* deprecatedValues(
  value: unknown,
  schema: SchemaNode = fileSchema as SchemaNode,
  at: readonly string[] = [],
): Generator<{ readonly path: readonly string[]; readonly message: string }> {
  if (schema.rule?.deprecated !== undefined) {
    const message = value === null || value === undefined ? undefined : schema.rule.deprecated(value)
    if (message !== undefined) yield { path: at, message }
    return
  }
  const node = schema.type === 'nullish' && schema.wrapped !== undefined ? schema.wrapped : schema
  if (node.entries === undefined || typeof value !== 'object' || value === null || Array.isArray(value))
    return
  for (const [key, child] of Object.entries(node.entries)) {
    if (Object.hasOwn(value, key))
      yield* deprecatedValues((value as Record<string, unknown>)[key], child, [...at, key])
  }
}

function closestKey(key: string, accepted: readonly string[]): string | undefined {
  let best: string | undefined
  let bestDistance = Math.max(2, Math.floor(key.length / 3)) + 1
  for (const candidate of accepted) {
    const distance = editDistance(key.toLowerCase().replaceAll('-', '_'), candidate)
    if (distance < bestDistance) {
      best = candidate
      bestDistance = distance
    }
  }
  return best
}

/** Levenshtein distance (keys are short). */
function editDistance(a: string, b: string): number {
  if (a.length > 64) return Number.POSITIVE_INFINITY
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      current[j] = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        (previous[j - 1] as number) + cost,
      )
    }
    previous = current
  }
  return previous[b.length] as number
}
