import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ModelMessage } from 'ai'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { afterEach, beforeEach, describe, expect, expectTypeOf, it } from 'vitest'
import type { ConversationMemory as AgentConversationMemory, AgentRunner } from '../src/agent/index.js'
import {
  type CompactionOutcome,
  DEFAULT_SESSION_LIMITS,
  migrateSessions,
  SESSION_MIGRATION_TABLE,
  SessionError,
  type SessionEvent,
  type SessionLimits,
  type SessionObserver,
  SessionStore,
  sessionMigrations,
} from '../src/sessions/index.js'
import { postgresSchemas } from './fixtures/postgres-schema.js'

// biome-ignore lint/suspicious/noExplicitAny: the store accepts any host handle, as the server's is
type AnyDatabase = Kysely<any>

/** The agent runner's port (apps/server/src/agent), declared here with the same shape. */
interface ConversationMemory {
  load(
    sessionKey: string,
    options?: { readonly signal?: AbortSignal },
  ): Promise<{ readonly observations: readonly string[]; readonly messages: readonly ModelMessage[] }>
  append(
    sessionKey: string,
    messages: readonly ModelMessage[],
    options?: { readonly signal?: AbortSignal },
  ): Promise<void>
}

const KEY = 'telegram:-100200:42'
const START = Date.UTC(2025, 0, 1)

/** A clock tests move by hand. */
function manualClock(start = START) {
  let now = start
  return {
    now: () => new Date(now),
    advance(ms: number) {
      now += ms
    },
  }
}

function deferred<T = void>() {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((done) => {
    resolve = done
  })
  return { promise, resolve }
}

const user = (text: string): ModelMessage => ({ role: 'user', content: text })
const reply = (text: string): ModelMessage => ({ role: 'assistant', content: [{ type: 'text', text }] })
/** An assistant message calling tools `ids` (in parallel when several). */
const call = (...ids: string[]): ModelMessage => ({
  role: 'assistant',
  content: ids.map((id) => ({
    type: 'tool-call' as const,
    toolCallId: id,
    toolName: 'exec',
    input: { command: 'ls' },
  })),
})
const result = (...ids: string[]): ModelMessage => ({
  role: 'tool',
  content: ids.map((id) => ({
    type: 'tool-result' as const,
    toolCallId: id,
    toolName: 'exec',
    output: { type: 'text' as const, value: 'ok' },
  })),
})
const users = (from: number, to: number): ModelMessage[] =>
  Array.from({ length: to - from + 1 }, (_, index) => user(`m${from + index}`))

/** A short label per message: `m3`, `a:hi`, `call:x`, `result:x`. */
function label(message: ModelMessage): string {
  if (typeof message.content === 'string') return message.content
  return message.content
    .map((part) => {
      if (part.type === 'text') return message.role === 'user' ? part.text : `a:${part.text}`
      if (part.type === 'tool-call') return `call:${part.toolCallId}`
      if (part.type === 'tool-result') return `result:${part.toolCallId}`
      return part.type
    })
    .join('+')
}

type ObserverMode = 'ok' | 'throw' | 'empty' | 'no-text' | 'hang' | 'block'

/** A deterministic observer (a port fake): records every call; `mode` decides what it does. */
function fakeObserver(options: { reflect?: boolean } = {}) {
  const calls: { labels: string[]; observations: readonly string[]; signal: AbortSignal }[] = []
  const reflections: string[][] = []
  let entered = deferred<number>()
  let gate = deferred()
  const state = { mode: 'ok' as ObserverMode, reflectMode: 'ok' as 'ok' | 'throw' | 'block' }
  const observer: SessionObserver = {
    async observe(messages, { signal, observations }) {
      const labels = messages.map(label)
      calls.push({ labels, observations, signal })
      entered.resolve(calls.length)
      entered = deferred<number>()
      if (state.mode === 'throw') throw new Error('model unavailable')
      if (state.mode === 'empty') return '  '
      if (state.mode === 'no-text') return undefined as unknown as string
      if (state.mode === 'hang') await new Promise(() => {})
      if (state.mode === 'block') await gate.promise
      return `saw ${labels.join(',')}`
    },
  }
  if (options.reflect !== false) {
    observer.reflect = async (observations) => {
      reflections.push([...observations])
      entered.resolve(calls.length + reflections.length)
      entered = deferred<number>()
      if (state.reflectMode === 'throw') throw new Error('reflector unavailable')
      if (state.reflectMode === 'block') await gate.promise
      return `reflected(${observations.join(' | ')})`
    }
  }
  return {
    observer,
    calls,
    reflections,
    state,
    /** Resolves when the observer (or reflector) is next called. */
    nextCall: () => entered.promise,
    release() {
      gate.resolve()
      gate = deferred()
    },
  }
}

/** Collects events; `next(type)` resolves on the next event of that type (call it before the trigger). */
function eventLog() {
  const events: SessionEvent[] = []
  const waiters: { type: SessionEvent['type']; resolve: (event: SessionEvent) => void }[] = []
  return {
    events,
    onEvent(event: SessionEvent) {
      events.push(event)
      for (const waiter of [...waiters]) {
        if (waiter.type !== event.type) continue
        waiters.splice(waiters.indexOf(waiter), 1)
        waiter.resolve(event)
      }
    },
    next<T extends SessionEvent['type']>(type: T): Promise<Extract<SessionEvent, { type: T }>> {
      return new Promise((resolve) =>
        waiters.push({ type, resolve: resolve as (event: SessionEvent) => void }),
      )
    },
  }
}

/** Small thresholds: compaction after 6 messages, keeping 2. */
const LIMITS: Partial<SessionLimits> = {
  maxMessages: 50,
  observeAfterMessages: 6,
  keepRecentMessages: 2,
  observeAfterTokens: 100_000,
  keepRecentTokens: 50_000,
  maxObserveTokens: 100_000,
  reflectAfterObservations: 10,
  keepRecentObservations: 1,
  maxObservations: 20,
  observeTimeoutMs: 5_000,
  leaseMs: 10_000,
}

async function expectSessionError(promise: Promise<unknown>, code: string): Promise<SessionError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  )
  expect(SessionError.is(error), `expected a SessionError ${code}, got ${String(error)}`).toBe(true)
  expect((error as SessionError).code).toBe(code)
  return error as SessionError
}

async function rawMessages(db: AnyDatabase, key = KEY): Promise<number[]> {
  const rows = await db
    .selectFrom('session_messages')
    .select('seq')
    .where('session_key', '=', key)
    .orderBy('seq')
    .execute()
  return rows.map((row: { seq: unknown }) => Number(row.seq))
}

async function rawObservations(db: AnyDatabase, key = KEY) {
  const rows = await db
    .selectFrom('session_observations')
    .selectAll()
    .where('session_key', '=', key)
    .orderBy('through_seq')
    .execute()
  return rows.map((row: Record<string, unknown>) => ({
    fromSeq: Number(row.from_seq),
    throughSeq: Number(row.through_seq),
    generation: Number(row.generation),
    text: row.text as string,
  }))
}

interface Opened {
  readonly db: AnyDatabase
  /** Another handle on the same database (PostgreSQL: its own pool; SQLite: the same handle, as the server shares one). */
  readonly second: AnyDatabase
  close(): Promise<void>
}

interface Backend {
  readonly name: string
  open(): Promise<Opened>
}

const sqliteBackend: Backend = {
  name: 'SQLite',
  async open() {
    const dir = await mkdtemp(join(tmpdir(), 'lango-sessions-'))
    const database = new Database(join(dir, 'lango.db'))
    database.pragma('journal_mode = WAL')
    database.pragma('synchronous = NORMAL')
    database.pragma('busy_timeout = 5000')
    const db: AnyDatabase = new Kysely({ dialect: new SqliteDialect({ database }) })
    await migrateSessions(db)
    return {
      db,
      second: db,
      async close() {
        await db.destroy()
        await rm(dir, { recursive: true, force: true })
      },
    }
  },
}

/**
 * PostgreSQL at 127.0.0.1:5432 (test/fixtures/postgres-schema.ts): each test gets a fresh schema,
 * dropped afterwards. Undefined (with the reason) when the server is not reachable.
 */
async function postgresBackend(): Promise<{ backend?: Backend; reason?: string }> {
  const { open, reason } = await postgresSchemas<Record<string, never>>('sessions_test')
  if (open === undefined) return { reason: reason ?? 'PostgreSQL is not reachable' }
  return {
    backend: {
      name: 'PostgreSQL',
      async open() {
        const schema = await open()
        const db = schema.db as AnyDatabase
        await migrateSessions(db)
        return { db, second: schema.another() as AnyDatabase, close: () => schema.close() }
      },
    },
  }
}

/** Seeds history with a store that has no observer (so nothing compacts). */
async function seed(db: AnyDatabase, messages: readonly ModelMessage[], key = KEY, clock = manualClock()) {
  const store = new SessionStore(db, { limits: LIMITS, clock })
  await store.append(key, messages)
  await store.stop()
}

/** Every behaviour, on one backend. */
function behaviour(backend: () => Backend) {
  let opened: Opened
  /** What this test opened: a beforeEach that timed out leaves nothing (not the previous test's). */
  let toClose: Opened | undefined
  const stores: SessionStore[] = []
  /** A store closed after the test. */
  const open = (options: ConstructorParameters<typeof SessionStore>[1] = {}, db?: AnyDatabase) => {
    const store = new SessionStore(db ?? opened.db, { limits: LIMITS, ...options })
    stores.push(store)
    return store
  }
  beforeEach(async () => {
    opened = await backend().open()
    toClose = opened
  })
  afterEach(async () => {
    const closing = toClose
    toClose = undefined
    await Promise.all(stores.splice(0).map((store) => store.stop()))
    await closing?.close()
  })

  describe('append and load', () => {
    it('returns messages in append order across turns, with monotonic sequence numbers', async () => {
      const store = open()
      await store.append(KEY, [user('m1'), reply('r1')])
      await store.append(KEY, [user('m2'), call('c1'), result('c1'), reply('r2')])
      await store.append('http:other', [user('x1')])
      const loaded = await store.load(KEY)
      expect(loaded.observations).toEqual([])
      expect(loaded.messages.map(label)).toEqual(['m1', 'a:r1', 'm2', 'call:c1', 'result:c1', 'a:r2'])
      expect(loaded.messages[3]).toEqual(call('c1'))
      expect(await rawMessages(opened.db)).toEqual([1, 2, 3, 4, 5, 6])
      expect((await store.load('http:other')).messages.map(label)).toEqual(['x1'])
      expect(await store.load('cron:never-used')).toEqual({ observations: [], messages: [] })
    })

    it('keeps sequence numbers monotonic after compaction deleted the covered messages', async () => {
      const events = eventLog()
      const fake = fakeObserver()
      const store = open({ observer: fake.observer, onEvent: events.onEvent })
      const done = events.next('compaction:end')
      await store.append(KEY, users(1, 7))
      await done
      await store.append(KEY, [user('m8')])
      expect(await rawMessages(opened.db)).toEqual([6, 7, 8])
      const [summary] = await store.list()
      expect(summary).toMatchObject({
        key: KEY,
        lastSeq: 8,
        observedThrough: 5,
        messageCount: 3,
        observationCount: 1,
      })
    })

    it('round-trips bytes as base64 and drops undefined fields', async () => {
      const store = open()
      const message = {
        role: 'user',
        content: [
          { type: 'text', text: 'see', providerOptions: undefined },
          { type: 'image', image: new Uint8Array([1, 2, 3]), mediaType: 'image/png' },
        ],
      } as ModelMessage
      await store.append(KEY, [message])
      const [loaded] = (await store.load(KEY)).messages
      expect(loaded).toEqual({
        role: 'user',
        content: [
          { type: 'text', text: 'see' },
          { type: 'image', image: 'AQID', mediaType: 'image/png' },
        ],
      })
    })

    it('refuses bad keys and bad messages with typed errors, storing nothing', async () => {
      const store = open()
      for (const key of ['', 'nokind', 'Telegram:1', 'http:', `http:${'x'.repeat(224)}`, 'http:a\nb', 42]) {
        await expectSessionError(store.append(key as string, [user('m1')]), 'SESSION_INVALID_KEY')
        await expectSessionError(store.load(key as string), 'SESSION_INVALID_KEY')
      }
      const bad: unknown[] = [
        null,
        { role: 'robot', content: 'x' },
        { role: 'user' },
        { role: 'tool', content: 'not parts' },
        { role: 'system', content: [{ type: 'text', text: 'x' }] },
        { role: 'user', content: [{ text: 'no type' }] },
        { role: 'user', content: [{ type: 'text', text: 'x', extra: () => 1 }] },
        { role: 'user', content: [{ type: 'text', text: 'x', n: Number.NaN }] },
        { role: 'user', content: [{ type: 'text', text: 'x', when: new Date() }] },
      ]
      for (const message of bad) {
        const error = await expectSessionError(
          store.append(KEY, [user('ok'), message as ModelMessage]),
          'SESSION_INVALID_MESSAGE',
        )
        expect(error.data).toMatchObject({ index: 1 })
      }
      expect(await store.list()).toEqual([])
      await store.append(KEY, [])
      expect(await store.list()).toEqual([])
    })

    it('honours aborted signals before any work', async () => {
      const store = open({ observer: fakeObserver().observer })
      const controller = new AbortController()
      const reason = new Error('caller gave up')
      controller.abort(reason)
      const signal = controller.signal
      await expect(store.append(KEY, [user('m1')], { signal })).rejects.toBe(reason)
      await expect(store.load(KEY, { signal })).rejects.toBe(reason)
      await expect(store.compact(KEY, { signal })).rejects.toBe(reason)
      await expect(store.list({ signal })).rejects.toBe(reason)
      await expect(store.delete(KEY, { signal })).rejects.toBe(reason)
      await expect(store.sweep({ signal })).rejects.toBe(reason)
      expect(await store.list()).toEqual([])
    })
  })

  describe('bounds', () => {
    it('drops the oldest unobserved messages beyond maxMessages, never splitting a tool call from its result', async () => {
      const events = eventLog()
      const store = open({
        onEvent: events.onEvent,
        limits: { ...LIMITS, maxMessages: 8, observeAfterMessages: 6, keepRecentMessages: 2 },
      })
      await store.append(KEY, [user('m1'), call('c1'), result('c1'), reply('r1')])
      await store.append(KEY, users(2, 5))
      expect(events.events).toEqual([])
      await store.append(KEY, [user('m6')])
      // 9 > 8: m1 goes; the kept history starts with call:c1, its result still behind it.
      expect((await store.load(KEY)).messages.map(label)).toEqual([
        'call:c1',
        'result:c1',
        'a:r1',
        'm2',
        'm3',
        'm4',
        'm5',
        'm6',
      ])
      await store.append(KEY, [user('m7')])
      // Dropping one more would split call:c1 from result:c1: the whole group goes.
      expect((await store.load(KEY)).messages.map(label)).toEqual([
        'a:r1',
        'm2',
        'm3',
        'm4',
        'm5',
        'm6',
        'm7',
      ])
      expect(events.events).toEqual([
        { type: 'messages:dropped', sessionKey: KEY, count: 1, throughSeq: 1 },
        { type: 'messages:dropped', sessionKey: KEY, count: 2, throughSeq: 3 },
      ])
      expect(await rawMessages(opened.db)).toEqual([4, 5, 6, 7, 8, 9, 10])
    })

    it('drops the oldest messages beyond maxSessionBytes', async () => {
      const store = open({ limits: { ...LIMITS, maxMessageBytes: 1_000, maxSessionBytes: 2_000 } })
      const big = (name: string) => user(`${name}:${'x'.repeat(600)}`)
      await store.append(KEY, [big('b1'), big('b2'), big('b3')])
      await store.append(KEY, [big('b4')])
      const loaded = (await store.load(KEY)).messages.map((message) => label(message).slice(0, 2))
      expect(loaded).toEqual(['b2', 'b3', 'b4'])
      const [summary] = await store.list()
      expect(summary?.messageCount).toBe(3)
    })

    it('shrinks an oversized message: binary parts become a note, then long texts are cut with a marker', async () => {
      const store = open({ limits: { ...LIMITS, maxMessageBytes: 4_096 } })
      await store.append(KEY, [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is in this picture?' },
            { type: 'image', image: new Uint8Array(6_000).fill(7), mediaType: 'image/png' },
          ],
        },
        { role: 'assistant', content: [{ type: 'text', text: 'y'.repeat(10_000) }] },
      ])
      const [picture, long] = (await store.load(KEY)).messages
      expect(picture).toEqual({
        role: 'user',
        content: [
          { type: 'text', text: 'what is in this picture?' },
          {
            type: 'text',
            text: expect.stringMatching(/^\[image image\/png omitted: 8000 characters of base64/),
          },
        ],
      })
      const text = ((long as { content: { text: string }[] }).content[0] as { text: string }).text
      expect(text.startsWith('y'.repeat(1_000))).toBe(true)
      expect(text).toMatch(/\n\[… \d+ characters truncated\]$/)
      expect(Buffer.byteLength(JSON.stringify(long))).toBeLessThanOrEqual(4_096)
    })

    it('refuses a message that cannot shrink enough, and a turn larger than the session bounds', async () => {
      const store = open({ limits: { ...LIMITS, maxMessageBytes: 2_048, maxSessionBytes: 8_192 } })
      const manyCalls: ModelMessage = {
        role: 'assistant',
        content: Array.from({ length: 100 }, (_, index) => ({
          type: 'tool-call' as const,
          toolCallId: `call-${index}`,
          toolName: 'exec',
          input: { command: 'echo short' },
        })),
      }
      const tooLarge = await expectSessionError(store.append(KEY, [manyCalls]), 'SESSION_MESSAGE_TOO_LARGE')
      expect(tooLarge.data).toMatchObject({ index: 0, maxBytes: 2_048 })
      await expectSessionError(store.append(KEY, users(1, 51)), 'SESSION_TURN_TOO_LARGE')
      const chunk = user('z'.repeat(2_000))
      await expectSessionError(
        store.append(KEY, [chunk, chunk, chunk, chunk, chunk]),
        'SESSION_TURN_TOO_LARGE',
      )
      expect(await store.list()).toEqual([])
    })

    it('rejects inconsistent limits', () => {
      const invalid: Partial<SessionLimits>[] = [
        { keepRecentMessages: 6, observeAfterMessages: 6 },
        { observeAfterMessages: 600 },
        { maxMessageBytes: 5 * 1024 * 1024 },
        { observeTimeoutMs: 600_000 },
        { maxMessages: 0 },
        { retentionMs: 1.5 },
        { unknown: 1 } as Partial<SessionLimits>,
      ]
      for (const limits of invalid) {
        expect(() => new SessionStore(opened.db, { limits }), JSON.stringify(limits)).toThrowError(
          expect.objectContaining({ code: 'SESSION_INVALID_OPTION' }),
        )
      }
      expect(new SessionStore(opened.db).limits).toEqual(DEFAULT_SESSION_LIMITS)
    })
  })

  describe('observational compaction', () => {
    it('passing the message threshold starts a compaction in the background; load returns observations plus the rest', async () => {
      const events = eventLog()
      const fake = fakeObserver()
      const store = open({ observer: fake.observer, onEvent: events.onEvent })
      await store.append(KEY, users(1, 3))
      await store.append(KEY, users(4, 6))
      expect(fake.calls).toEqual([])
      const end = events.next('compaction:end')
      await store.append(KEY, [user('m7')])
      const { outcome } = await end
      expect(outcome).toEqual({
        status: 'compacted',
        observedMessages: 5,
        observationsAdded: 1,
        reflected: 0,
      })
      expect(fake.calls.map((entry) => entry.labels)).toEqual([['m1', 'm2', 'm3', 'm4', 'm5']])
      expect(await store.load(KEY)).toEqual({
        observations: ['saw m1,m2,m3,m4,m5'],
        messages: [user('m6'), user('m7')],
      })
      expect(await rawMessages(opened.db)).toEqual([6, 7])
      expect(await rawObservations(opened.db)).toEqual([
        { fromSeq: 1, throughSeq: 5, generation: 0, text: 'saw m1,m2,m3,m4,m5' },
      ])
      expect(events.events.map((event) => event.type)).toEqual(['observation:commit', 'compaction:end'])
    })

    it('passes the estimated-token threshold too, keeping at most keepRecentTokens', async () => {
      const events = eventLog()
      const fake = fakeObserver()
      const store = open({
        observer: fake.observer,
        onEvent: events.onEvent,
        limits: { ...LIMITS, observeAfterTokens: 200, keepRecentTokens: 100 },
      })
      const long = (name: string) => user(`${name} ${'w'.repeat(270)}`) // ≈ 300 bytes ≈ 75 tokens
      await store.append(KEY, [long('l1'), long('l2')])
      expect(fake.calls).toEqual([])
      const end = events.next('compaction:end')
      await store.append(KEY, [long('l3')])
      await end
      expect(fake.calls.map((entry) => entry.labels.map((text) => text.slice(0, 2)))).toEqual([['l1', 'l2']])
      expect((await store.load(KEY)).messages.map((message) => label(message).slice(0, 2))).toEqual(['l3'])
    })

    it('accumulates observations in order and hands the observer the earlier ones', async () => {
      const events = eventLog()
      const fake = fakeObserver()
      const store = open({ observer: fake.observer, onEvent: events.onEvent })
      let end = events.next('compaction:end')
      await store.append(KEY, users(1, 7))
      await end
      end = events.next('compaction:end')
      await store.append(KEY, users(8, 12))
      await end
      expect(fake.calls.map((entry) => entry.observations)).toEqual([[], ['saw m1,m2,m3,m4,m5']])
      expect(await store.load(KEY)).toEqual({
        observations: ['saw m1,m2,m3,m4,m5', 'saw m6,m7,m8,m9,m10'],
        messages: [user('m11'), user('m12')],
      })
    })

    it('an explicit compact below the threshold does nothing', async () => {
      const fake = fakeObserver()
      const store = open({ observer: fake.observer })
      await seed(opened.db, users(1, 6))
      expect(await store.compact(KEY)).toEqual({
        status: 'skipped',
        reason: 'below-threshold',
        observedMessages: 0,
        observationsAdded: 0,
        reflected: 0,
      })
      expect(await store.compact('http:none')).toMatchObject({ status: 'skipped', reason: 'no-session' })
      expect(await open().compact(KEY)).toMatchObject({ status: 'skipped', reason: 'no-observer' })
      expect(fake.calls).toEqual([])
    })

    it('observes a large backlog in several batches of at most maxObserveTokens', async () => {
      const fake = fakeObserver()
      const store = open({
        observer: fake.observer,
        limits: { ...LIMITS, observeAfterMessages: 6, keepRecentMessages: 2, maxObserveTokens: 24 },
      })
      await seed(opened.db, users(1, 12)) // 8 estimated tokens each: 3 per batch
      const outcome = await store.compact(KEY)
      // Two batches bring the backlog to the threshold (6); the rest waits for the next append.
      expect(outcome).toMatchObject({ status: 'compacted', observedMessages: 6, observationsAdded: 2 })
      expect(fake.calls.map((entry) => entry.labels)).toEqual([
        ['m1', 'm2', 'm3'],
        ['m4', 'm5', 'm6'],
      ])
      expect(fake.calls[1]?.observations).toEqual(['saw m1,m2,m3'])
      expect((await store.load(KEY)).messages.map(label)).toEqual(['m7', 'm8', 'm9', 'm10', 'm11', 'm12'])
    })
  })

  describe('tool calls stay with their results', () => {
    it('moves the boundary before an assistant tool call when its result would stay behind', async () => {
      const fake = fakeObserver()
      const store = open({ observer: fake.observer })
      // 8 messages, keep 2: the natural cut (6) falls between call:c2 and result:c2, and no turn
      // starts from 3 to 6, so the largest allowed cut below it (5, before call:c2) is taken.
      await seed(opened.db, [
        reply('r0'),
        reply('r1'),
        user('m2'),
        reply('r2'),
        reply('r3'),
        call('c2'),
        result('c2'),
        reply('r4'),
      ])
      await store.compact(KEY)
      expect(fake.calls.map((entry) => entry.labels)).toEqual([['a:r0', 'a:r1', 'm2', 'a:r2', 'a:r3']])
      expect((await store.load(KEY)).messages.map(label)).toEqual(['call:c2', 'result:c2', 'a:r4'])
    })

    it('prefers to cut where a turn starts, so the kept history begins with the person speaking', async () => {
      const fake = fakeObserver()
      const store = open({ observer: fake.observer })
      // 8 messages, keep 2: the natural cut (6) moves back to the user message at 4.
      await seed(opened.db, [
        user('m1'),
        reply('r1'),
        user('m2'),
        reply('r2'),
        user('m3'),
        call('c2'),
        result('c2'),
        reply('r3'),
      ])
      await store.compact(KEY)
      expect(fake.calls.map((entry) => entry.labels)).toEqual([['m1', 'a:r1', 'm2', 'a:r2']])
      expect((await store.load(KEY)).messages.map(label)).toEqual(['m3', 'call:c2', 'result:c2', 'a:r3'])
    })

    it('never starts the kept history with tool results (parallel calls, several tool messages)', async () => {
      const fake = fakeObserver()
      const store = open({ observer: fake.observer })
      // The natural cut (7) falls between the two tool messages answering c3 and c4; no turn
      // starts from 4 to 7, so the cut moves to 5, before the parallel calls.
      await seed(opened.db, [
        user('m1'),
        call('c1'),
        result('c1'),
        reply('r1'),
        reply('r2'),
        call('c3', 'c4'),
        result('c3'),
        result('c4'),
        reply('r3'),
      ])
      await store.compact(KEY)
      expect(fake.calls.map((entry) => entry.labels)).toEqual([
        ['m1', 'call:c1', 'result:c1', 'a:r1', 'a:r2'],
      ])
      expect((await store.load(KEY)).messages.map(label)).toEqual([
        'call:c3+call:c4',
        'result:c3',
        'result:c4',
        'a:r3',
      ])
    })

    it('observes forward past a group when no earlier boundary exists', async () => {
      const fake = fakeObserver()
      const store = open({ observer: fake.observer, limits: { ...LIMITS, keepRecentMessages: 3 } })
      // Six parallel calls answered by six tool messages: no cut from 1 to 6 is allowed, so the
      // desired cut (6) moves forward to 7 instead of splitting the group.
      const ids = ['c1', 'c2', 'c3', 'c4', 'c5', 'c6']
      await seed(opened.db, [call(...ids), ...ids.map((id) => result(id)), user('m1'), reply('r1')])
      await store.compact(KEY)
      expect(fake.calls[0]?.labels).toEqual([
        'call:c1+call:c2+call:c3+call:c4+call:c5+call:c6',
        ...ids.map((id) => `result:${id}`),
      ])
      expect((await store.load(KEY)).messages.map(label)).toEqual(['m1', 'a:r1'])
    })
  })

  describe('concurrency', () => {
    it('two compactions of one session in one store share one observer call', async () => {
      const fake = fakeObserver()
      fake.state.mode = 'block'
      const store = open({ observer: fake.observer })
      await seed(opened.db, users(1, 8))
      const first = store.compact(KEY)
      await fake.nextCall()
      const second = store.compact(KEY)
      fake.release()
      const [one, two] = await Promise.all([first, second])
      expect(one).toEqual(two)
      expect(one).toMatchObject({ status: 'compacted', observedMessages: 6, observationsAdded: 1 })
      expect(fake.calls).toHaveLength(1)
      expect(await rawObservations(opened.db)).toHaveLength(1)
    })

    it('a second instance finds the lease held and does not call its observer', async () => {
      const holder = fakeObserver()
      holder.state.mode = 'block'
      const other = fakeObserver()
      const a = open({ observer: holder.observer })
      const b = open({ observer: other.observer }, opened.second)
      await seed(opened.db, users(1, 8))
      const first = a.compact(KEY)
      await holder.nextCall()
      expect(await b.compact(KEY)).toMatchObject({ status: 'skipped', reason: 'busy' })
      holder.release()
      expect(await first).toMatchObject({ status: 'compacted', observedMessages: 6 })
      expect(other.calls).toEqual([])
      expect(await b.load(KEY)).toEqual({
        observations: ['saw m1,m2,m3,m4,m5,m6'],
        messages: [user('m7'), user('m8')],
      })
    })

    it('when a lease expires mid-observation, the store guard keeps exactly one observation', async () => {
      const clock = manualClock()
      const slow = fakeObserver()
      slow.state.mode = 'block'
      const fast = fakeObserver()
      const a = open({ observer: slow.observer, clock })
      const b = open({ observer: fast.observer, clock }, opened.second)
      await seed(opened.db, users(1, 8))
      const first = a.compact(KEY)
      await slow.nextCall()
      clock.advance(10_001)
      expect(await b.compact(KEY)).toMatchObject({ status: 'compacted', observedMessages: 6 })
      slow.release()
      expect(await first).toMatchObject({ status: 'skipped', reason: 'conflict', observedMessages: 0 })
      expect(slow.calls).toHaveLength(1)
      expect(fast.calls).toHaveLength(1)
      expect(await rawObservations(opened.db)).toEqual([
        { fromSeq: 1, throughSeq: 6, generation: 0, text: 'saw m1,m2,m3,m4,m5,m6' },
      ])
      expect(await a.load(KEY)).toEqual({
        observations: ['saw m1,m2,m3,m4,m5,m6'],
        messages: [user('m7'), user('m8')],
      })
    })

    it('appends during an observer call land after the observed range and stay', async () => {
      const fake = fakeObserver()
      fake.state.mode = 'block'
      const store = open({ observer: fake.observer })
      await seed(opened.db, users(1, 8))
      const running = store.compact(KEY)
      await fake.nextCall()
      await store.append(KEY, [user('m9'), user('m10')])
      fake.release()
      await running
      expect((await store.load(KEY)).messages.map(label)).toEqual(['m7', 'm8', 'm9', 'm10'])
    })

    it('a session deleted during an observer call gets no observation', async () => {
      const fake = fakeObserver()
      fake.state.mode = 'block'
      const store = open({ observer: fake.observer })
      await seed(opened.db, users(1, 8))
      const running = store.compact(KEY)
      await fake.nextCall()
      expect(await store.delete(KEY)).toBe(true)
      await store.append(KEY, [user('n1')])
      fake.release()
      expect(await running).toMatchObject({ status: 'skipped', reason: 'conflict' })
      expect(await rawObservations(opened.db)).toEqual([])
      expect(await store.load(KEY)).toEqual({ observations: [], messages: [user('n1')] })
      expect(await store.delete(KEY)).toBe(true)
      expect(await store.delete(KEY)).toBe(false)
    })
  })

  describe('observer failure', () => {
    it('a throwing observer leaves the session intact, never blocks append, and is retried after the back-off', async () => {
      const clock = manualClock()
      const events = eventLog()
      const fake = fakeObserver()
      fake.state.mode = 'throw'
      const store = open({
        observer: fake.observer,
        clock,
        onEvent: events.onEvent,
        limits: { ...LIMITS, retryBaseMs: 60_000 },
      })
      const failed = events.next('compaction:error')
      await store.append(KEY, users(1, 7))
      const error = await failed
      expect(error.error.code).toBe('SESSION_OBSERVER_FAILED')
      expect((error.error.cause as Error).message).toBe('model unavailable')
      expect(error.retryAt).toBe(START + 60_000)
      expect(await store.load(KEY)).toEqual({ observations: [], messages: users(1, 7) })
      expect(await rawObservations(opened.db)).toEqual([])

      clock.advance(60_001)
      fake.state.mode = 'ok'
      const end = events.next('compaction:end')
      await store.append(KEY, [user('m8')])
      await end
      expect(fake.calls.map((entry) => entry.labels)).toEqual([
        ['m1', 'm2', 'm3', 'm4', 'm5'],
        ['m1', 'm2', 'm3', 'm4', 'm5', 'm6'],
      ])
      expect(await store.load(KEY)).toEqual({
        observations: ['saw m1,m2,m3,m4,m5,m6'],
        messages: users(7, 8),
      })
    })

    it('during the back-off, appends store their messages and start no compaction', async () => {
      const events = eventLog()
      const fake = fakeObserver()
      fake.state.mode = 'throw'
      const store = open({ observer: fake.observer, onEvent: events.onEvent, clock: manualClock() })
      const failed = events.next('compaction:error')
      await store.append(KEY, users(1, 7))
      await failed
      await store.append(KEY, [user('m8')])
      await store.append(KEY, [user('m9')])
      await store.stop()
      expect(fake.calls).toHaveLength(1)
      expect(events.events.map((event) => event.type)).toEqual(['compaction:error'])
      expect((await store.load(KEY)).messages).toEqual(users(1, 9))
      // An explicit compact ignores the back-off (but this store is stopped).
      expect(await store.compact(KEY)).toMatchObject({ status: 'skipped', reason: 'stopped' })
    })

    it('an empty observation means nothing worth keeping: the messages count as observed, no text is stored', async () => {
      const fake = fakeObserver()
      fake.state.mode = 'empty'
      const store = open({ observer: fake.observer })
      await seed(opened.db, users(1, 7))
      expect(await store.compact(KEY)).toEqual({
        status: 'compacted',
        observedMessages: 5,
        observationsAdded: 0,
        reflected: 0,
      })
      expect(await store.load(KEY)).toEqual({ observations: [], messages: users(6, 7) })
      expect(await rawMessages(opened.db)).toEqual([6, 7])
      expect(await rawObservations(opened.db)).toEqual([])
    })

    it('an answer that is not text counts as a failure', async () => {
      const fake = fakeObserver()
      fake.state.mode = 'no-text'
      const store = open({ observer: fake.observer })
      await seed(opened.db, users(1, 7))
      const outcome = await store.compact(KEY)
      expect(outcome).toMatchObject({ status: 'failed', observedMessages: 0 })
      expect(outcome.error?.code).toBe('SESSION_OBSERVER_FAILED')
      expect(await store.load(KEY)).toEqual({ observations: [], messages: users(1, 7) })
    })

    it('an observer that never answers is cut off after observeTimeoutMs, its signal aborted', async () => {
      const fake = fakeObserver()
      fake.state.mode = 'hang'
      const store = open({
        observer: fake.observer,
        limits: { ...LIMITS, observeTimeoutMs: 100, leaseMs: 1_000 },
      })
      await seed(opened.db, users(1, 7))
      const outcome = await store.compact(KEY)
      expect(outcome.status).toBe('failed')
      expect(fake.calls[0]?.signal.aborted).toBe(true)
      expect(await store.load(KEY)).toEqual({ observations: [], messages: users(1, 7) })
      // The lease was released: another compaction may run at once.
      fake.state.mode = 'ok'
      expect(await store.compact(KEY)).toMatchObject({ status: 'compacted', observedMessages: 5 })
    })

    it('stop() aborts an observer call in flight and waits; the session is unchanged', async () => {
      const fake = fakeObserver()
      fake.state.mode = 'hang'
      const store = open({ observer: fake.observer })
      await seed(opened.db, users(1, 7))
      const running = store.compact(KEY)
      await fake.nextCall()
      await store.stop()
      expect(await running).toMatchObject({ status: 'skipped', reason: 'stopped' })
      expect(fake.calls[0]?.signal.aborted).toBe(true)
      expect(await store.load(KEY)).toEqual({ observations: [], messages: users(1, 7) })
      const rows = await opened.db.selectFrom('sessions').select(['lease_owner']).execute()
      expect(rows).toEqual([{ lease_owner: null }])
    })

    it("a caller's abort ends its wait with the reason; the run finishes on its own", async () => {
      const events = eventLog()
      const fake = fakeObserver()
      fake.state.mode = 'block'
      const store = open({ observer: fake.observer, onEvent: events.onEvent })
      await seed(opened.db, users(1, 7))
      const controller = new AbortController()
      const waiting = store.compact(KEY, { signal: controller.signal })
      await fake.nextCall()
      const reason = new Error('client went away')
      const end = events.next('compaction:end')
      controller.abort(reason)
      await expect(waiting).rejects.toBe(reason)
      fake.release()
      expect((await end).outcome).toMatchObject({ status: 'compacted', observedMessages: 5 })
    })
  })

  describe('reflection', () => {
    const REFLECTING: Partial<SessionLimits> = {
      ...LIMITS,
      observeAfterMessages: 3,
      keepRecentMessages: 1,
      reflectAfterObservations: 2,
      keepRecentObservations: 1,
      maxObservations: 4,
    }

    it('condenses older observations into a reflection once there are too many', async () => {
      const events = eventLog()
      const fake = fakeObserver()
      const store = open({ observer: fake.observer, onEvent: events.onEvent, limits: REFLECTING })
      for (const [from, to] of [
        [1, 4],
        [5, 7],
        [8, 10],
      ] as const) {
        const end = events.next('compaction:end')
        await store.append(KEY, users(from, to))
        await end
      }
      expect(fake.reflections).toEqual([['saw m1,m2,m3', 'saw m4,m5,m6']])
      expect(await store.load(KEY)).toEqual({
        observations: ['reflected(saw m1,m2,m3 | saw m4,m5,m6)', 'saw m7,m8,m9'],
        messages: [user('m10')],
      })
      expect(await rawObservations(opened.db)).toEqual([
        { fromSeq: 1, throughSeq: 6, generation: 1, text: 'reflected(saw m1,m2,m3 | saw m4,m5,m6)' },
        { fromSeq: 7, throughSeq: 9, generation: 0, text: 'saw m7,m8,m9' },
      ])
      expect(events.events.filter((event) => event.type === 'reflection:commit')).toEqual([
        { type: 'reflection:commit', sessionKey: KEY, condensed: 2, generation: 1 },
      ])
    })

    it('without a reflect method, asks observe to condense the observations', async () => {
      const fake = fakeObserver({ reflect: false })
      const store = open({ observer: fake.observer, limits: REFLECTING })
      await seed(opened.db, [...users(1, 3), user('m4')])
      await store.compact(KEY)
      await store.append(KEY, users(5, 7))
      await store.compact(KEY)
      await store.append(KEY, users(8, 10))
      const outcome = await store.compact(KEY)
      expect(outcome).toMatchObject({ status: 'compacted', reflected: 2 })
      const last = fake.calls[fake.calls.length - 1]
      expect(last?.labels).toHaveLength(1)
      expect(last?.labels[0]).toContain('Observation 1:\nsaw m1,m2,m3')
      expect((await store.load(KEY)).observations).toHaveLength(2)
    })

    it('two instances reflecting the same observations (lease expired meanwhile) store one reflection', async () => {
      const clock = manualClock()
      const setup = fakeObserver()
      const builder = open({
        observer: setup.observer,
        clock,
        limits: { ...REFLECTING, reflectAfterObservations: 3 },
      })
      await seed(opened.db, users(1, 4))
      for (const [from, to] of [
        [5, 7],
        [8, 10],
      ] as const) {
        await builder.compact(KEY)
        await builder.append(KEY, users(from, to))
      }
      await builder.compact(KEY)
      await builder.stop()
      expect((await rawObservations(opened.db)).map((entry) => entry.text)).toEqual([
        'saw m1,m2,m3',
        'saw m4,m5,m6',
        'saw m7,m8,m9',
      ])

      const slow = fakeObserver()
      slow.state.reflectMode = 'block'
      const fast = fakeObserver()
      const a = open({ observer: slow.observer, clock, limits: REFLECTING })
      const b = open({ observer: fast.observer, clock, limits: REFLECTING }, opened.second)
      const first = a.compact(KEY)
      await slow.nextCall()
      clock.advance(10_001)
      expect(await b.compact(KEY)).toMatchObject({ status: 'compacted', reflected: 2 })
      slow.release()
      expect(await first).toMatchObject({ status: 'skipped', reason: 'conflict', reflected: 0 })
      expect(await rawObservations(opened.db)).toEqual([
        { fromSeq: 1, throughSeq: 6, generation: 1, text: 'reflected(saw m1,m2,m3 | saw m4,m5,m6)' },
        { fromSeq: 7, throughSeq: 9, generation: 0, text: 'saw m7,m8,m9' },
      ])
    })

    it('while reflection keeps failing, observations stay bounded by maxObservations', async () => {
      const events = eventLog()
      const fake = fakeObserver()
      fake.state.reflectMode = 'throw'
      const store = open({ observer: fake.observer, onEvent: events.onEvent, limits: REFLECTING })
      await seed(opened.db, users(1, 4))
      for (let round = 0; round < 6; round += 1) {
        await store.compact(KEY)
        await store.append(KEY, users(5 + round * 3, 7 + round * 3))
      }
      const observations = await rawObservations(opened.db)
      expect(observations).toHaveLength(4)
      expect(observations.map((entry) => entry.generation)).toEqual([0, 0, 0, 0])
      expect(events.events.some((event) => event.type === 'observations:dropped')).toBe(true)
      expect(events.events.some((event) => event.type === 'compaction:error')).toBe(true)
    })
  })

  describe('listing, deleting and retention', () => {
    it('lists with counts, by exact prefix and in pages', async () => {
      const store = open()
      await store.append('telegram:1:1', [user('a')])
      await store.append('telegram:2:1', [user('a'), user('b')])
      await store.append('http:s1', [user('a')])
      await store.append('cron:backup', [user('a')])
      expect((await store.list()).map((entry) => entry.key)).toEqual([
        'cron:backup',
        'http:s1',
        'telegram:1:1',
        'telegram:2:1',
      ])
      const telegram = await store.list({ prefix: 'telegram:' })
      expect(telegram.map((entry) => [entry.key, entry.messageCount])).toEqual([
        ['telegram:1:1', 1],
        ['telegram:2:1', 2],
      ])
      expect(await store.list({ prefix: 'TELEGRAM:' })).toEqual([])
      expect(await store.list({ prefix: 'telegram_%' })).toEqual([])
      const first = await store.list({ limit: 2 })
      const next = await store.list({ limit: 2, after: first[first.length - 1]?.key })
      expect([...first, ...next].map((entry) => entry.key)).toHaveLength(4)
      expect(next.map((entry) => entry.key)).toEqual(['telegram:1:1', 'telegram:2:1'])
      await expectSessionError(store.list({ limit: 501 }), 'SESSION_INVALID_OPTION')
      await expectSessionError(store.list({ limit: 0 }), 'SESSION_INVALID_OPTION')
    })

    it('expires sessions idle longer than the retention, keeping active ones and their rows', async () => {
      const clock = manualClock()
      const events = eventLog()
      const fake = fakeObserver()
      const day = 24 * 60 * 60 * 1000
      const store = open({
        observer: fake.observer,
        clock,
        onEvent: events.onEvent,
        limits: { ...LIMITS, retentionMs: 30 * day },
      })
      const compacted = events.next('compaction:end')
      await store.append('telegram:1:1', users(1, 7))
      await compacted
      clock.advance(20 * day)
      await store.append('http:s1', [user('a')])
      clock.advance(10 * day)
      expect(await store.sweep()).toEqual({ expired: 0, evicted: 0 })
      clock.advance(1)
      expect(await store.sweep()).toEqual({ expired: 1, evicted: 0 })
      expect((await store.list()).map((entry) => entry.key)).toEqual(['http:s1'])
      expect(await rawMessages(opened.db, 'telegram:1:1')).toEqual([])
      expect(await rawObservations(opened.db, 'telegram:1:1')).toEqual([])
      expect(await store.load('telegram:1:1')).toEqual({ observations: [], messages: [] })
      clock.advance(20 * day)
      await store.append('http:s1', [user('b')]) // activity renews retention
      clock.advance(29 * day)
      expect(await store.sweep()).toEqual({ expired: 0, evicted: 0 })
      expect(events.events.filter((event) => event.type === 'sweep:end')).toHaveLength(3)
    })

    it('keeps at most maxSessions, evicting the least recently used', async () => {
      const clock = manualClock()
      const store = open({ clock, limits: { ...LIMITS, maxSessions: 3 } })
      for (const key of ['http:a', 'http:b', 'http:c']) {
        await store.append(key, [user('x')])
        clock.advance(1_000)
      }
      await store.append('http:a', [user('y')]) // a is now the most recent
      clock.advance(1_000)
      await store.append('http:d', [user('x')])
      expect((await store.list()).map((entry) => entry.key)).toEqual(['http:a', 'http:c', 'http:d'])
      expect(await rawMessages(opened.db, 'http:b')).toEqual([])
    })

    it('start() sweeps at once and on its interval; stop() ends it', async () => {
      const clock = manualClock()
      const events = eventLog()
      const store = open({
        clock,
        onEvent: events.onEvent,
        limits: { ...LIMITS, retentionMs: 1_000, sweepIntervalMs: 50 },
      })
      await store.append('http:old', [user('x')])
      clock.advance(1_001)
      const first = events.next('sweep:end')
      store.start()
      expect(await first).toEqual({ type: 'sweep:end', expired: 1, evicted: 0 })
      const second = events.next('sweep:end')
      expect(await second).toEqual({ type: 'sweep:end', expired: 0, evicted: 0 })
      await store.stop()
      const count = events.events.length
      await new Promise((resolve) => setTimeout(resolve, 150))
      expect(events.events).toHaveLength(count)
    })
  })
}

describe('sessions on SQLite (a real file, WAL)', () => {
  behaviour(() => sqliteBackend)

  it('exports its migrations in the house style', () => {
    expect(Object.keys(sessionMigrations)).toEqual(['0001_create_session_tables'])
    expect(SESSION_MIGRATION_TABLE).toBe('session_migrations')
  })

  it('satisfies the agent runner’s ConversationMemory port structurally; the runner fits the observer port', async () => {
    expectTypeOf<SessionStore>().toMatchTypeOf<ConversationMemory>()
    // The real port and runner in src/agent (checked by tsc --noEmit over test/).
    expectTypeOf<SessionStore>().toMatchTypeOf<AgentConversationMemory>()
    expectTypeOf<AgentRunner>().toMatchTypeOf<SessionObserver>()
    const fits = (memory: AgentConversationMemory, runner: AgentRunner, db: AnyDatabase) =>
      [memory, new SessionStore(db, { observer: runner })] as const
    expect(typeof fits).toBe('function')
    const opened = await sqliteBackend.open()
    const memory: ConversationMemory = new SessionStore(opened.db)
    await memory.append('http:typed', [user('hello')])
    expect(await memory.load('http:typed')).toEqual({ observations: [], messages: [user('hello')] })
    await opened.close()
  })

  it('migrations run twice are a no-op', async () => {
    const opened = await sqliteBackend.open()
    await migrateSessions(opened.db)
    const outcome: CompactionOutcome = await new SessionStore(opened.db).compact(KEY)
    expect(outcome.reason).toBe('no-observer')
    await opened.close()
  })
})

const postgres = await postgresBackend()
describe.skipIf(postgres.backend === undefined)(
  `sessions on PostgreSQL (127.0.0.1:5432, database test)${postgres.reason === undefined ? '' : ` — SKIPPED: ${postgres.reason}`}`,
  () => {
    behaviour(() => postgres.backend as Backend)
  },
)
