import { stat } from 'node:fs/promises'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Logger } from '../logger.js'
import { ChannelError, reasonOf } from './errors.js'
import { CHANNEL_NAME_PATTERN } from './target.js'
import type { ChannelAdapter, ChannelAdapterFactory } from './types.js'

/** One custom channel in config: `channels.custom[]`. */
interface CustomChannelSpec {
  /** The channel's name (`[a-z][a-z0-9_-]{0,31}`); targets are `<name>:<id>`. */
  readonly name: string
  /** The module's path: absolute, or relative to `$LANGO_HOME`. */
  readonly module: string
  /** Handed to the factory as they are; the factory validates them. */
  readonly options?: Readonly<Record<string, unknown>>
}

/** Options of {@link loadChannelAdapter}. */
interface LoadChannelAdapterOptions {
  /** `$LANGO_HOME`: relative module paths start there. */
  readonly home: string
  /** Given to the factory, scoped to the channel. */
  readonly logger: Logger
  readonly signal?: AbortSignal
}

/**
 * Imports a custom channel adapter: the module at `spec.module` (absolute or relative to
 * `$LANGO_HOME`) default-exports a factory `(options, context) => ChannelAdapter` (or a promise of
 * one). Typed errors: `CHANNEL_INVALID_OPTIONS` (bad name), `CHANNEL_ADAPTER_NOT_FOUND` (no such
 * file), `CHANNEL_ADAPTER_LOAD_FAILED` (the module or the factory threw), `CHANNEL_ADAPTER_INVALID`
 * (no default-exported function, or the factory's result is not an adapter named `spec.name`).
 *
 * The module runs with the server's rights: it is configuration the operator wrote, never something
 * the agent can name.
 */
export async function loadChannelAdapter(
  spec: CustomChannelSpec,
  options: LoadChannelAdapterOptions,
): Promise<ChannelAdapter> {
  options.signal?.throwIfAborted()
  if (!CHANNEL_NAME_PATTERN.test(spec.name))
    throw new ChannelError(
      'CHANNEL_INVALID_OPTIONS',
      'a custom channel name is 1-32 characters of a-z, 0-9, _ and -, starting with a letter',
      { data: { name: spec.name.slice(0, 40) } },
    )
  const path = resolve(options.home, spec.module)
  const data = { channel: spec.name, module: path }
  const found = await stat(path).then(
    (stats) => stats.isFile(),
    () => false,
  )
  if (!found)
    throw new ChannelError(
      'CHANNEL_ADAPTER_NOT_FOUND',
      `channel ${spec.name}: no adapter module at ${path}`,
      { data },
    )
  let loaded: { default?: unknown }
  try {
    loaded = (await import(pathToFileURL(path).href)) as { default?: unknown }
  } catch (error) {
    throw new ChannelError(
      'CHANNEL_ADAPTER_LOAD_FAILED',
      `channel ${spec.name}: the adapter module failed to load${reasonOf(error)}${whereOf(error, path)}`,
      {
        cause: error,
        data,
      },
    )
  }
  options.signal?.throwIfAborted()
  const factory = loaded.default
  if (typeof factory !== 'function')
    throw new ChannelError(
      'CHANNEL_ADAPTER_INVALID',
      `channel ${spec.name}: the adapter module must default-export a factory function (options, context) => adapter`,
      { data },
    )
  const logger = scopedLogger(options.logger, spec.name)
  let adapter: unknown
  try {
    adapter = await (factory as ChannelAdapterFactory)(spec.options ?? {}, {
      name: spec.name,
      home: options.home,
      logger,
    })
  } catch (error) {
    throw new ChannelError(
      'CHANNEL_ADAPTER_LOAD_FAILED',
      `channel ${spec.name}: the adapter factory threw${reasonOf(error)}`,
      {
        cause: error,
        data,
      },
    )
  }
  if (!isChannelAdapter(adapter))
    throw new ChannelError(
      'CHANNEL_ADAPTER_INVALID',
      `channel ${spec.name}: the factory must return an adapter ({ name, send, start?, requestApproval?, stop? })`,
      { data },
    )
  if (adapter.name !== spec.name)
    throw new ChannelError(
      'CHANNEL_ADAPTER_INVALID',
      `channel ${spec.name}: the factory returned an adapter named ${String(adapter.name).slice(0, 40)}; use context.name`,
      { data },
    )
  return adapter
}

/**
 * True when `value` has the shape of a {@link ChannelAdapter}: a string `name`, a `send` function, and
 * `start`, `requestApproval`, `checkChat`, `stop` functions when present.
 */
export function isChannelAdapter(value: unknown): value is ChannelAdapter {
  if (typeof value !== 'object' || value === null) return false
  const candidate = value as Record<string, unknown>
  const optional = ['start', 'requestApproval', 'checkChat', 'stop'].every(
    (key) => candidate[key] === undefined || typeof candidate[key] === 'function',
  )
  return typeof candidate.name === 'string' && typeof candidate.send === 'function' && optional
}

function scopedLogger(logger: Logger, channel: string): Logger {
  return {
    debug: (message, fields) => logger.debug(message, { channel, ...fields }),
    info: (message, fields) => logger.info(message, { channel, ...fields }),
    warn: (message, fields) => logger.warn(message, { channel, ...fields }),
    error: (message, fields) => logger.error(message, { channel, ...fields }),
  }
}

/** ` (at <file>:<line>)` of a module that failed to load, when its stack names a line of `path`. */
function whereOf(error: unknown, path: string): string {
  const given = (error as { stack?: unknown } | null | undefined)?.stack
  const stack = typeof given === 'string' ? given : ''
  const escaped = path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const match = new RegExp(`${escaped}:(\\d+)`).exec(stack)
  return match === null ? '' : ` (at ${path}:${match[1]})`
}
