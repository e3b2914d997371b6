import type { ModelMessage } from 'ai'

/**
 * The conversation memory the agent runner reads before a turn and writes after it: the narrow
 * port over the server's persisted sessions (implemented in `src/sessions/`, which compacts old
 * messages into observations with the runner's `observe`).
 */
export interface ConversationMemory {
  /** The context for the next turn: observation texts (oldest first) and the kept messages (oldest first). */
  load(
    sessionKey: string,
    options?: { readonly signal?: AbortSignal },
  ): Promise<{ readonly observations: readonly string[]; readonly messages: readonly ModelMessage[] }>
  /** Appends a finished turn's messages (the user message, then the response messages). */
  append(
    sessionKey: string,
    messages: readonly ModelMessage[],
    options?: { readonly signal?: AbortSignal },
  ): Promise<void>
}
