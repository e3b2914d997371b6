import type { Command } from 'commander'
import type { CommandContext } from './context.js'
import type { Output } from './output.js'

/**
 * What a command produced: `data` is the `--json` document; `render` prints it for people
 * (tables, lines). `exitCode` defaults to 0.
 */
export interface Outcome {
  readonly data: unknown
  readonly render?: (out: Output) => void
  readonly exitCode?: number
  /** A server (`serve`, `mcp`): the process stays up after the action, until a signal. */
  readonly keepRunning?: boolean
  /** Print nothing on stdout, not even the `--json` document (`mcp`: stdout is the protocol's). */
  readonly silent?: boolean
}

/** Option values of one command (its own, not the global ones). */
// biome-ignore lint/suspicious/noExplicitAny: commander's option values are untyped until read
export type CommandOptions = Record<string, any>

/** A command's body: positional arguments first, then the command's options. */
type ActionHandler = (
  context: CommandContext,
  args: readonly string[],
  options: CommandOptions,
) => Promise<Outcome>

/** Turns a handler into a commander action; `bind` supplies the context and records the outcome. */
export type ActionBinder = (handler: ActionHandler) => (...actionArgs: unknown[]) => Promise<void>

/** How a group of commands is added to the program. */
export type Register = (program: Command, action: ActionBinder) => void
