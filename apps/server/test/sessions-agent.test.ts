/**
 * The session store wired to the real agent runner, as the server wires it: the store is the
 * runner's ConversationMemory, and the runner's model-backed `observe` is the store's observer.
 * Only the model is fake, at the wire (a node:http OpenAI-compatible server on 127.0.0.1).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type AgentRunner, createAgentRunner } from '../src/agent/index.js'
import { migrateSessions, type SessionEvent, SessionStore } from '../src/sessions/index.js'
import { type FakeOpenAI, reply, startFakeOpenAI } from './fixtures/fake-openai.js'

// biome-ignore lint/suspicious/noExplicitAny: the store accepts any host handle, as the server's is
type AnyDatabase = Kysely<any>

const KEY = 'http:chat-1'

describe('sessions with the real agent runner (fake model at the wire)', () => {
  let dir: string
  let db: AnyDatabase
  let model: FakeOpenAI

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'lango-sessions-agent-'))
    const database = new Database(join(dir, 'lango.db'))
    database.pragma('journal_mode = WAL')
    db = new Kysely({ dialect: new SqliteDialect({ database }) })
    await migrateSessions(db)
    model = await startFakeOpenAI()
  })

  afterEach(async () => {
    await model.close()
    await db.destroy()
    await rm(dir, { recursive: true, force: true })
  })

  /** The store observes through the runner, and the runner remembers through the store. */
  function wire(limits = { observeAfterMessages: 3, keepRecentMessages: 1 }) {
    const events: SessionEvent[] = []
    const waiters: ((event: SessionEvent) => void)[] = []
    let runner: AgentRunner | undefined
    const store = new SessionStore(db, {
      limits,
      observer: { observe: (messages, options) => (runner as AgentRunner).observe(messages, options) },
      onEvent(event) {
        events.push(event)
        for (const waiter of waiters.splice(0)) waiter(event)
      },
    })
    runner = createAgentRunner({ baseUrl: model.baseUrl, model: 'test-model', memory: store, maxRetries: 0 })
    const nextEnd = () =>
      new Promise<SessionEvent>((resolve) => {
        const wait = (event: SessionEvent) =>
          event.type === 'compaction:end' || event.type === 'compaction:error'
            ? resolve(event)
            : waiters.push(wait)
        waiters.push(wait)
      })
    return { store, runner, events, nextEnd }
  }

  it('turns are remembered, old ones become an observation from the model, and the next turn sees it', async () => {
    const { store, runner, nextEnd } = wire()
    model.script(reply.text('Hi Ada.'), reply.text('Noted: blue.'))
    await runner.chat(KEY, 'My name is Ada.')
    expect((await store.load(KEY)).messages).toEqual([
      { role: 'user', content: 'My name is Ada.' },
      { role: 'assistant', content: [{ type: 'text', text: 'Hi Ada.' }] },
    ])
    // The second turn passes the threshold (4 > 3): the observer turn is the third model request.
    // Keeping 1 would start the kept history mid-turn; the cut moves back to the second turn's start.
    model.script(reply.text('- The user is called Ada.'))
    const compacted = nextEnd()
    await runner.chat(KEY, 'I like blue.')
    expect(await compacted).toMatchObject({
      type: 'compaction:end',
      outcome: { status: 'compacted', observedMessages: 2 },
    })
    const observerRequest = JSON.stringify(model.chatBodies[2]?.messages)
    expect(observerRequest).toContain('My name is Ada.')
    expect(observerRequest).toContain('Hi Ada.')
    expect(observerRequest).not.toContain('I like blue.')
    expect(await store.load(KEY)).toEqual({
      observations: ['- The user is called Ada.'],
      messages: [
        { role: 'user', content: 'I like blue.' },
        { role: 'assistant', content: [{ type: 'text', text: 'Noted: blue.' }] },
      ],
    })

    // The next turn carries the observation in its system prompt and only the kept turn.
    model.script(reply.text('Your name is Ada.'))
    await runner.chat(KEY, 'What is my name?')
    const next = model.chatBodies[3]
    expect(next?.messages[0]?.role).toBe('system')
    expect(String(next?.messages[0]?.content)).toContain('- The user is called Ada.')
    expect(next?.messages.slice(1).map((message) => message.content)).toEqual([
      'I like blue.',
      'Noted: blue.',
      'What is my name?',
    ])
    await store.stop()
  })

  it('a failing model leaves the session whole; the turn itself still succeeds', async () => {
    const { store, runner, nextEnd } = wire()
    model.script(reply.text('one'), reply.text('two'), reply.error(500, 'overloaded'))
    await runner.chat(KEY, 'first')
    const failed = nextEnd()
    await runner.chat(KEY, 'second')
    const event = await failed
    expect(event.type).toBe('compaction:error')
    expect(await store.load(KEY)).toMatchObject({ observations: [], messages: { length: 4 } })
    await store.stop()
  })

  it('without a configured model the observer fails with the runner’s error and nothing is lost', async () => {
    const runner = createAgentRunner({})
    const store = new SessionStore(db, {
      observer: runner,
      limits: { observeAfterMessages: 3, keepRecentMessages: 1 },
    })
    await store.append(KEY, [
      { role: 'user', content: 'a' },
      { role: 'user', content: 'b' },
      { role: 'user', content: 'c' },
      { role: 'user', content: 'd' },
    ])
    const outcome = await store.compact(KEY)
    expect(outcome.status).toBe('failed')
    expect((outcome.error?.cause as { code?: string } | undefined)?.code).toBe('AGENT_NO_MODEL')
    expect((await store.load(KEY)).messages).toHaveLength(4)
    await store.stop()
  })
})
