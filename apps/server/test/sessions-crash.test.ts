/**
 * The crash window of observational compaction, tested with a real process: a child compacts a
 * session in a real SQLite file and freezes at a chosen point (inside the observer call, or in the
 * synchronous `observation:commit` listener — between the observation's commit and the deletion
 * of the messages it covers); the test kills it with SIGKILL, reopens the file and checks that
 * nothing was lost or repeated, and that compaction resumes without re-observing.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { ModelMessage } from 'ai'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import { build } from 'tsup'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { migrateSessions, type SessionObserver, SessionStore } from '../src/sessions/index.js'

// biome-ignore lint/suspicious/noExplicitAny: the store accepts any host handle, as the server's is
type AnyDatabase = Kysely<any>

const SERVER = fileURLToPath(new URL('..', import.meta.url))
const KEY = 'telegram:-100200:42'
const START = Date.UTC(2025, 0, 1)
/** Compaction after 4 unobserved messages, keeping 2; leases of 10 s. */
const LIMITS = { observeAfterMessages: 4, keepRecentMessages: 2, observeTimeoutMs: 5_000, leaseMs: 10_000 }

/**
 * The child: opens the file as the server does, compacts KEY once with an observer that labels
 * what it saw, and freezes (Atomics.wait, forever) where `stopAt` says, after telling the parent.
 */
const CHILD_SOURCE = `
import { writeSync } from 'node:fs'
import { createRequire } from 'node:module'
import { Kysely, SqliteDialect } from 'kysely'
import { SessionStore } from ${JSON.stringify(join(SERVER, 'src/sessions/index.ts'))}

const Database = createRequire(${JSON.stringify(join(SERVER, 'package.json'))})('better-sqlite3')
const [file, stopAt, now, key, limits] = process.argv.slice(2)
const say = (line) => writeSync(1, line + '\\n')
const freeze = () => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)

const database = new Database(file)
database.pragma('journal_mode = WAL')
database.pragma('synchronous = NORMAL')
database.pragma('busy_timeout = 5000')
const db = new Kysely({ dialect: new SqliteDialect({ database }) })
const store = new SessionStore(db, {
  clock: { now: () => new Date(Number(now)) },
  limits: JSON.parse(limits),
  observer: {
    async observe(messages) {
      const text = 'saw ' + messages.map((message) => message.content).join(',')
      if (stopAt === 'observe') {
        say('observing ' + text)
        freeze()
      }
      return text
    },
  },
  onEvent(event) {
    if (event.type === 'observation:commit' && stopAt === 'commit') {
      say('committed ' + event.throughSeq)
      freeze()
    }
  },
})
const outcome = await store.compact(key)
say('done ' + JSON.stringify(outcome))
await store.stop()
await db.destroy()
`

let workDir: string
let childScript: string

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'lango-sessions-crash-'))
  await writeFile(join(workDir, 'child.ts'), CHILD_SOURCE)
  await build({
    entry: { child: join(workDir, 'child.ts') },
    outDir: join(workDir, 'out'),
    format: ['esm'],
    platform: 'node',
    target: 'node20',
    config: false,
    silent: true,
    dts: false,
    outExtension: () => ({ js: '.mjs' }),
    noExternal: [/./],
    external: ['better-sqlite3'],
    esbuildOptions(options) {
      // The child lives in a temp dir: resolve its bare imports as the server does.
      options.nodePaths = [join(SERVER, 'node_modules')]
    },
  })
  childScript = join(workDir, 'out', 'child.mjs')
})

afterAll(async () => {
  await rm(workDir, { recursive: true, force: true })
})

const user = (text: string): ModelMessage => ({ role: 'user', content: text })
const users = (from: number, to: number): ModelMessage[] =>
  Array.from({ length: to - from + 1 }, (_, index) => user(`m${from + index}`))

/** Opens the file as the server does (WAL, synchronous=NORMAL) and migrates. */
async function openFile(file: string): Promise<AnyDatabase> {
  const database = new Database(file)
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = NORMAL')
  database.pragma('busy_timeout = 5000')
  const db: AnyDatabase = new Kysely({ dialect: new SqliteDialect({ database }) })
  await migrateSessions(db)
  return db
}

/** Runs the child until it prints a line starting with `waitFor`; returns the line and the child. */
function runChild(file: string, stopAt: 'observe' | 'commit' | 'none', waitFor: string) {
  const child = spawn(
    process.execPath,
    [childScript, file, stopAt, String(START), KEY, JSON.stringify(LIMITS)],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const line = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      const found = stdout.split('\n').find((entry) => entry.startsWith(waitFor))
      if (found !== undefined) resolve(found)
    })
    child.once('exit', (code, signal) =>
      reject(new Error(`child exited (${code ?? signal}) before "${waitFor}": ${stdout}${stderr}`)),
    )
  })
  return { child, line }
}

async function kill(child: ChildProcess): Promise<NodeJS.Signals | null> {
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.once('exit', (_code, signal) => resolve(signal)),
  )
  child.kill('SIGKILL')
  return exited
}

async function rawState(db: AnyDatabase) {
  const messages = await db
    .selectFrom('session_messages')
    .select('seq')
    .where('session_key', '=', KEY)
    .orderBy('seq')
    .execute()
  const observations = await db
    .selectFrom('session_observations')
    .select(['from_seq', 'through_seq', 'text'])
    .where('session_key', '=', KEY)
    .orderBy('through_seq')
    .execute()
  const session = await db
    .selectFrom('sessions')
    .select(['observed_through', 'lease_owner'])
    .where('key', '=', KEY)
    .executeTakeFirstOrThrow()
  return {
    seqs: messages.map((row: { seq: unknown }) => Number(row.seq)),
    observations: observations.map((row: { from_seq: unknown; through_seq: unknown; text: string }) => ({
      fromSeq: Number(row.from_seq),
      throughSeq: Number(row.through_seq),
      text: row.text,
    })),
    observedThrough: Number(session.observed_through),
    leaseHeld: session.lease_owner !== null,
  }
}

/** A recording observer for the restarted instance. */
function recordingObserver() {
  const calls: string[][] = []
  const observer: SessionObserver = {
    async observe(messages) {
      const labels = messages.map((message) => String(message.content))
      calls.push(labels)
      return `saw ${labels.join(',')}`
    },
  }
  return { calls, observer }
}

describe('compaction survives SIGKILL at every phase (a real child process on a real SQLite file)', () => {
  let dir: string
  let file: string
  let db: AnyDatabase | undefined
  let child: ChildProcess | undefined

  beforeEach(async () => {
    dir = await mkdtemp(join(workDir, 'db-'))
    file = join(dir, 'lango.db')
    const seeding = await openFile(file)
    const store = new SessionStore(seeding, { limits: LIMITS, clock: { now: () => new Date(START) } })
    await store.append(KEY, users(1, 10))
    await seeding.destroy()
  })

  afterEach(async () => {
    if (child !== undefined && child.exitCode === null && child.signalCode === null) await kill(child)
    child = undefined
    await db?.destroy()
    db = undefined
    await rm(dir, { recursive: true, force: true })
  })

  it('control: left alone, the child observes m1…m8 and deletes them', async () => {
    const run = runChild(file, 'none', 'done ')
    child = run.child
    const line = await run.line
    expect(JSON.parse(line.slice('done '.length))).toEqual({
      status: 'compacted',
      observedMessages: 8,
      observationsAdded: 1,
      reflected: 0,
    })
    db = await openFile(file)
    expect(await rawState(db)).toEqual({
      seqs: [9, 10],
      observations: [{ fromSeq: 1, throughSeq: 8, text: 'saw m1,m2,m3,m4,m5,m6,m7,m8' }],
      observedThrough: 8,
      leaseHeld: false,
    })
  })

  it('killed after the observation committed, before the delete: nothing lost, nothing repeated, no re-observation', async () => {
    const run = runChild(file, 'commit', 'committed ')
    child = run.child
    expect(await run.line).toBe('committed 8')
    expect(await kill(run.child)).toBe('SIGKILL')

    db = await openFile(file)
    // The crash landed between the phases: the observation is durable, its messages still there.
    expect(await rawState(db)).toEqual({
      seqs: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
      observations: [{ fromSeq: 1, throughSeq: 8, text: 'saw m1,m2,m3,m4,m5,m6,m7,m8' }],
      observedThrough: 8,
      leaseHeld: true,
    })

    let now = START
    const fake = recordingObserver()
    const store = new SessionStore(db, {
      observer: fake.observer,
      limits: LIMITS,
      clock: { now: () => new Date(now) },
    })
    // load skips what the observation covers even though the rows are still there.
    expect(await store.load(KEY)).toEqual({
      observations: ['saw m1,m2,m3,m4,m5,m6,m7,m8'],
      messages: users(9, 10),
    })
    // Re-running compaction cleans up the covered rows and observes nothing again.
    expect(await store.compact(KEY)).toMatchObject({ status: 'skipped', reason: 'below-threshold' })
    expect(fake.calls).toEqual([])
    expect((await rawState(db)).seqs).toEqual([9, 10])

    // New history past the threshold: the dead child's lease holds it off until it expires …
    await store.append(KEY, users(11, 13))
    expect(await store.compact(KEY)).toMatchObject({ status: 'skipped', reason: 'busy' })
    expect(fake.calls).toEqual([])
    // … then only the new messages are observed.
    now += LIMITS.leaseMs
    expect(await store.compact(KEY)).toMatchObject({ status: 'compacted', observedMessages: 3 })
    expect(fake.calls).toEqual([['m9', 'm10', 'm11']])
    expect(await store.load(KEY)).toEqual({
      observations: ['saw m1,m2,m3,m4,m5,m6,m7,m8', 'saw m9,m10,m11'],
      messages: users(12, 13),
    })
    expect(await rawState(db)).toMatchObject({
      seqs: [12, 13],
      observations: [
        { fromSeq: 1, throughSeq: 8, text: 'saw m1,m2,m3,m4,m5,m6,m7,m8' },
        { fromSeq: 9, throughSeq: 11, text: 'saw m9,m10,m11' },
      ],
      observedThrough: 11,
      leaseHeld: false,
    })
    await store.stop()
  })

  it('killed inside the observer call: nothing committed, and the restart observes the same range once', async () => {
    const run = runChild(file, 'observe', 'observing ')
    child = run.child
    expect(await run.line).toBe('observing saw m1,m2,m3,m4,m5,m6,m7,m8')
    expect(await kill(run.child)).toBe('SIGKILL')

    db = await openFile(file)
    expect(await rawState(db)).toEqual({
      seqs: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
      observations: [],
      observedThrough: 0,
      leaseHeld: true,
    })
    let now = START
    const fake = recordingObserver()
    const store = new SessionStore(db, {
      observer: fake.observer,
      limits: LIMITS,
      clock: { now: () => new Date(now) },
    })
    expect(await store.load(KEY)).toEqual({ observations: [], messages: users(1, 10) })
    expect(await store.compact(KEY)).toMatchObject({ status: 'skipped', reason: 'busy' })
    now += LIMITS.leaseMs
    expect(await store.compact(KEY)).toMatchObject({ status: 'compacted', observedMessages: 8 })
    expect(await store.compact(KEY)).toMatchObject({ status: 'skipped', reason: 'below-threshold' })
    expect(fake.calls).toEqual([['m1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7', 'm8']])
    expect(await store.load(KEY)).toEqual({
      observations: ['saw m1,m2,m3,m4,m5,m6,m7,m8'],
      messages: users(9, 10),
    })
    await store.stop()
  })
})
