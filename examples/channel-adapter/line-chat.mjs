// A Lango custom channel: a line-based chat over TCP. Connect with `nc 127.0.0.1 7879` (or
// `telnet`), type a line, get the agent's reply. Rooms are chats, nicknames are users, so the
// session key of a line is `<channel>:<room>:<nick>`. No dependencies beyond Node.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { createServer } from 'node:net'

/** Room and nick names: what a chat or user id may be in a session key. */
const NAME = /^[A-Za-z0-9_-]{1,32}$/
/** A connection whose unsent output passes this is too slow to keep. */
const MAX_BUFFERED_OUTPUT = 1024 * 1024

/**
 * The factory the server's loader calls: `(options, context) => ChannelAdapter`.
 *
 * @param {Readonly<Record<string, unknown>>} options `host` (default 127.0.0.1), `port` (default 7879;
 *   0 picks a free one), `token` (a shared secret of at least 8 characters: when set, a client's first
 *   line must be `/auth <token>`), `maxConnections` (16), `maxLineLength` (4096), `maxPendingApprovals`
 *   (16), `approvalTimeoutMs` (5 min), `defaultRoom` (`lobby`, where a bare `<name>` target goes).
 * @param {{ name: string, home: string, logger: { debug: Function, info: Function, warn: Function, error: Function } }} context
 */
export default function createLineChat(options, context) {
  const settings = readOptions(options)
  const { logger, name } = context
  /** @type {Set<Connection>} */
  const connections = new Set()
  /** @type {Map<string, { room: string, nick: string, answer: (approved: boolean | undefined) => void }>} */
  const approvals = new Map()
  /** @type {Set<Promise<unknown>>} */
  const inFlight = new Set()
  let nextConnection = 1
  /** @type {import('node:net').Server | undefined} */
  let server
  /** @type {AbortController | undefined} */
  let receiving
  /** @type {Promise<void> | undefined} */
  let stopping

  /** Writes `text` to a connection, dropping it when it stops reading. */
  const write = (/** @type {Connection} */ connection, /** @type {string} */ text) => {
    if (connection.socket.destroyed) return
    if (connection.socket.writableLength > MAX_BUFFERED_OUTPUT) {
      connection.socket.destroy()
      return
    }
    connection.socket.write(text)
  }
  const say = (/** @type {Connection} */ connection, /** @type {string} */ text) =>
    write(
      connection,
      `${text
        .split('\n')
        .map((line) => `lango> ${line}`)
        .join('\n')}\n`,
    )
  const inRoom = (/** @type {string} */ room) =>
    [...connections].filter((connection) => connection.authed && connection.room === room)

  /** @param {import('node:net').Socket} socket @param {InboundHandler} inbound */
  const accept = (socket, inbound) => {
    /** @type {Connection} */
    const connection = {
      socket,
      nick: `guest${nextConnection++}`,
      room: settings.defaultRoom,
      authed: settings.token === undefined,
      buffer: '',
    }
    connections.add(connection)
    socket.setEncoding('utf8')
    socket.on('error', () => socket.destroy())
    socket.on('close', () => connections.delete(connection))
    say(
      connection,
      connection.authed
        ? `welcome, ${connection.nick}: you are in room ${connection.room}. /help lists commands.`
        : 'send /auth <token> first.',
    )
    socket.on('data', (/** @type {string} */ chunk) => {
      connection.buffer += chunk
      for (let end = connection.buffer.indexOf('\n'); end !== -1; end = connection.buffer.indexOf('\n')) {
        const line = connection.buffer.slice(0, end).replace(/\r$/, '')
        connection.buffer = connection.buffer.slice(end + 1)
        onLine(connection, line, inbound)
      }
      if (connection.buffer.length > settings.maxLineLength) {
        say(connection, `lines are limited to ${settings.maxLineLength} characters; bye.`)
        socket.end()
        socket.destroy()
      }
    })
  }

  /** @param {Connection} connection @param {string} line @param {InboundHandler} inbound */
  const onLine = (connection, line, inbound) => {
    const text = line.trim()
    if (text === '') return
    if (!connection.authed) {
      const [command, given = ''] = text.split(/\s+/, 2)
      if (command === '/auth' && settings.token !== undefined && sameSecret(given, settings.token)) {
        connection.authed = true
        say(
          connection,
          `welcome, ${connection.nick}: you are in room ${connection.room}. /help lists commands.`,
        )
      } else {
        say(connection, 'wrong token; bye.')
        connection.socket.end()
      }
      return
    }
    const [command, argument = ''] = text.split(/\s+/, 2)
    switch (command) {
      case '/help':
        return say(
          connection,
          '/nick <name> · /join <room> · /approve <id> · /deny <id> · /quit · anything else goes to the agent',
        )
      case '/quit':
        connection.socket.end()
        return
      case '/nick':
      case '/join': {
        if (!NAME.test(argument))
          return say(connection, 'names are 1-32 characters of A-Z, a-z, 0-9, _ and -')
        if (command === '/nick') connection.nick = argument
        else connection.room = argument
        return say(connection, `you are ${connection.nick} in room ${connection.room}`)
      }
      case '/approve':
      case '/deny': {
        const pending = approvals.get(argument)
        if (pending === undefined || pending.room !== connection.room)
          return say(connection, `no approval ${argument} is pending here`)
        if (pending.nick !== connection.nick)
          return say(connection, `only ${pending.nick} can answer approval ${argument}`)
        pending.answer(command === '/approve')
        return say(connection, `approval ${argument}: ${command === '/approve' ? 'approved' : 'denied'}`)
      }
      default: {
        // Others in the room see the line; the agent's reply goes to the whole room.
        for (const other of inRoom(connection.room))
          if (other !== connection) write(other, `[${connection.nick}] ${text}\n`)
        const signal = receiving?.signal
        if (signal === undefined) return
        const room = connection.room
        const task = inbound(
          { channel: name, chatId: room, userId: connection.nick, text, userName: connection.nick },
          { signal },
        ).then(
          (reply) => {
            if (reply !== undefined && reply.trim() !== '')
              for (const member of inRoom(room)) say(member, reply)
          },
          (error) => {
            if (!signal.aborted) logger.error('line-chat handler failed', { error })
          },
        )
        inFlight.add(task)
        task.finally(() => inFlight.delete(task))
      }
    }
  }

  return {
    name,

    /** Where the chat listens once started (`port` is the real one when the option was 0). */
    get address() {
      const address = server?.address()
      return typeof address === 'object' && address !== null
        ? { host: address.address, port: address.port }
        : undefined
    },

    /** Writes `text` to everyone in room `chatId` (or the default room); fails when the room is empty. */
    async send(chatId, text, { signal } = {}) {
      signal?.throwIfAborted()
      const room = chatId ?? settings.defaultRoom
      if (!NAME.test(room)) throw new Error(`${name}: a room is 1-32 characters of A-Z, a-z, 0-9, _ and -`)
      const members = inRoom(room)
      if (members.length === 0) throw new Error(`${name}: nobody is in room ${room}`)
      for (const member of members) say(member, text)
    },

    /** Listens for connections; each line goes to `inbound`, its reply back to the room. */
    async start(inbound, { signal }) {
      signal.throwIfAborted()
      if (server !== undefined) return
      stopping = undefined
      receiving = new AbortController()
      const listening = createServer((socket) => accept(socket, inbound))
      listening.maxConnections = settings.maxConnections
      await new Promise((resolve, reject) => {
        listening.once('error', reject)
        listening.listen(settings.port, settings.host, () => {
          listening.off('error', reject)
          resolve(undefined)
        })
      })
      server = listening
      signal.addEventListener('abort', () => void this.stop(), { once: true })
      logger.info('line-chat listening', { host: settings.host, port: this.address?.port })
    },

    /** Asks `userId` in room `chatId`; `/approve <id>` or `/deny <id>` from that nick answers. */
    async requestApproval(chatId, userId, request, { signal }) {
      signal.throwIfAborted()
      const asked = inRoom(chatId).filter((connection) => connection.nick === userId)
      if (asked.length === 0) return undefined
      if (approvals.size >= settings.maxPendingApprovals)
        throw new Error(`${name}: too many approvals are pending`)
      const id = randomBytes(3).toString('hex')
      /** @type {(approved: boolean | undefined) => void} */
      let answer = () => undefined
      /** @type {(reason: unknown) => void} */
      let fail = () => undefined
      const answered = new Promise((resolve, reject) => {
        answer = resolve
        fail = reject
      })
      approvals.set(id, { room: chatId, nick: userId, answer })
      const timer = setTimeout(() => answer(undefined), settings.approvalTimeoutMs)
      const onAbort = () => fail(signal.reason)
      signal.addEventListener('abort', onAbort, { once: true })
      try {
        // The whole request, never cut: the person must see every command before answering.
        for (const connection of asked)
          say(
            connection,
            `approval ${id}: ${request.toolName} (${request.safety}) ${request.summary}\nanswer /approve ${id} or /deny ${id}`,
          )
        return await answered
      } finally {
        clearTimeout(timer)
        signal.removeEventListener('abort', onAbort)
        approvals.delete(id)
      }
    },

    /** Closes the listener and every connection, ends pending approvals, waits for handlers. */
    stop() {
      stopping ??= (async () => {
        receiving?.abort()
        for (const pending of approvals.values()) pending.answer(undefined)
        const closing = server
        server = undefined
        for (const connection of connections) connection.socket.destroy()
        if (closing !== undefined) await new Promise((resolve) => closing.close(() => resolve(undefined)))
        await Promise.allSettled([...inFlight])
      })()
      return stopping
    },
  }
}

/**
 * @typedef {{ socket: import('node:net').Socket, nick: string, room: string, authed: boolean, buffer: string }} Connection
 * @typedef {(message: { channel: string, chatId: string, userId: string, text: string, userName?: string }, options: { signal: AbortSignal }) => Promise<string | undefined>} InboundHandler
 */

/** Validates the options from config; a bad one is a clear error at start-up. */
function readOptions(/** @type {Readonly<Record<string, unknown>>} */ options) {
  const integer = (/** @type {string} */ key, /** @type {number} */ fallback, /** @type {number} */ min) => {
    const value = options[key] ?? fallback
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min)
      throw new Error(`line-chat: ${key} must be an integer of at least ${min}`)
    return value
  }
  const host = options.host ?? '127.0.0.1'
  if (typeof host !== 'string' || host === '') throw new Error('line-chat: host must be a non-empty string')
  const token = options.token
  if (token !== undefined && (typeof token !== 'string' || token.length < 8))
    throw new Error('line-chat: token must be a string of at least 8 characters')
  const defaultRoom = options.defaultRoom ?? 'lobby'
  if (typeof defaultRoom !== 'string' || !NAME.test(defaultRoom))
    throw new Error('line-chat: defaultRoom must be 1-32 characters of A-Z, a-z, 0-9, _ and -')
  const port = integer('port', 7879, 0)
  if (port > 65535) throw new Error('line-chat: port must be at most 65535')
  return {
    host,
    port,
    token,
    defaultRoom,
    maxConnections: integer('maxConnections', 16, 1),
    maxLineLength: integer('maxLineLength', 4096, 16),
    maxPendingApprovals: integer('maxPendingApprovals', 16, 1),
    approvalTimeoutMs: integer('approvalTimeoutMs', 5 * 60_000, 1),
  }
}

/** Compares secrets in constant time (hashing first makes the lengths equal). */
function sameSecret(/** @type {string} */ given, /** @type {string} */ expected) {
  const digest = (/** @type {string} */ value) => createHash('sha256').update(value).digest()
  return timingSafeEqual(digest(given), digest(expected))
}
