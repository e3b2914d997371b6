// `lango backup <file>` (issue 24): a consistent copy of the SQLite database of a running server
// that keeps writing, made by the CLI on the file (SQLite's online backup API; ADR 0018). The real
// dist/cli.js in child processes against a real `lango serve`, as test/cli.test.ts runs them.
import type { ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { until } from './fixtures/http-server.js'
import { type LangoResult, runLango, startLangoServe } from './fixtures/lango-serve.js'

let home: string
let server: { child: ChildProcess; url: string } | undefined

/** Runs `lango …` to its end on the test's home. */
function lango(args: readonly string[], env: Record<string, string> = {}): Promise<LangoResult> {
  return runLango(args, { LANGO_HOME: home, ...env })
}

async function post(path: string, body: unknown = {}): Promise<Response> {
  return fetch(`${server?.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
}

function completedRuns(file: string): number {
  const database = new Database(file, { readonly: true })
  try {
    return database
      .prepare("select count(*) from cron_runs where job_name = 'busy' and status = 'completed'")
      .pluck()
      .get() as number
  } finally {
    database.close()
  }
}

beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), 'lango-backup-'))
  await writeFile(join(home, 'lango.yaml'), 'cron:\n  min_interval: 1s\n')
  server = await startLangoServe(home)
})
afterAll(async () => {
  if (server !== undefined && server.child.exitCode === null) {
    const exited = new Promise((resolve) => server?.child.once('exit', resolve))
    server.child.kill('SIGTERM')
    await exited
  }
  await rm(home, { recursive: true, force: true })
})

describe('lango backup', () => {
  it('copies the database of a running server while it writes: the copy is whole and has the rows', async () => {
    // A job every second, and triggers of a second job all through the backup: the server writes.
    const busy = await post('/api/cron/jobs', {
      kind: 'shell',
      name: 'busy',
      schedule_type: 'every',
      schedule: '1s',
      command: 'echo busy',
    })
    expect(busy.status).toBe(200)
    await post('/api/cron/jobs', {
      kind: 'shell',
      name: 'poked',
      schedule_type: 'cron',
      schedule: '0 3 * * *',
      command: 'true',
    })
    const database = join(home, 'lango.db')
    await until(async () => (completedRuns(database) >= 3 ? true : undefined))
    let poking = true
    const poker = (async () => {
      let pokes = 0
      while (poking) {
        await post('/api/cron/jobs/poked/trigger')
        pokes += 1
      }
      return pokes
    })()

    const before = completedRuns(database)
    const copies: string[] = []
    for (const name of ['first.db', 'second.db', 'third.db']) {
      const file = join(home, name)
      const result = await lango(['backup', file, '--json'])
      expect(result.code, result.stderr).toBe(0)
      expect(JSON.parse(result.stdout)).toMatchObject({
        status: 'ok',
        database,
        file,
        integrity: 'ok',
        bytes: expect.any(Number),
      })
      copies.push(file)
    }
    poking = false
    expect(await poker).toBeGreaterThan(0)

    for (const file of copies) {
      // The copy holds the vault's ciphertext and every conversation: its owner's only.
      expect(((await stat(file)).mode & 0o777).toString(8)).toBe('600')
      const copy = new Database(file, { readonly: true })
      try {
        expect(copy.pragma('integrity_check', { simple: true })).toBe('ok')
        expect(copy.pragma('journal_mode', { simple: true })).toBe('delete')
        const jobs = copy.prepare('select name from cron_jobs order by name').pluck().all()
        expect(jobs).toEqual(['busy', 'poked'])
        const names = copy.prepare('select name from lango_cron_migration').pluck().all()
        expect(names.length).toBeGreaterThan(0)
      } finally {
        copy.close()
      }
      expect(completedRuns(file)).toBeGreaterThanOrEqual(before)
    }
    // The server went on: more runs after the backups than in any copy. No partial files are left.
    await until(async () =>
      completedRuns(database) > completedRuns(copies.at(-1) as string) ? true : undefined,
    )
    expect((await readdir(home)).filter((name) => name.includes('.partial-'))).toEqual([])
    const health = (await (await fetch(`${server?.url}/healthz`)).json()) as { status: string }
    expect(health.status).toBe('ok')
  })

  it('refuses to replace a file unless --force', async () => {
    const file = join(home, 'existing.db')
    await writeFile(file, 'not a database')
    const refused = await lango(['backup', file])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain(`${file} exists: give --force to replace it`)
    const forced = await lango(['backup', file, '--force'])
    expect(forced.code, forced.stderr).toBe(0)
    expect(forced.stdout).toContain(`backed up ${join(home, 'lango.db')} to ${file}`)
    const copy = new Database(file, { readonly: true })
    expect(copy.pragma('integrity_check', { simple: true })).toBe('ok')
    copy.close()
  })

  it('on PostgreSQL says to use pg_dump and exits 1, naming the database without its password', async () => {
    const result = await lango(['backup', join(home, 'pg.db'), '--json'], {
      LANGO_DATABASE_URL: 'postgres://lango:hunter2@db.example:5432/lango',
    })
    expect(result.code).toBe(1)
    const { error } = JSON.parse(result.stdout) as { error: { code: string; message: string } }
    expect(error.code).toBe('CLI_BACKUP_UNSUPPORTED')
    expect(error.message).toContain('PostgreSQL (postgres://db.example:5432/lango): back it up with pg_dump')
    expect(result.stdout + result.stderr).not.toContain('hunter2')
    expect(existsSync(join(home, 'pg.db'))).toBe(false)
  })

  it('says so when there is no database to back up', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'lango-backup-empty-'))
    try {
      const result = await lango(['backup', join(empty, 'copy.db')], { LANGO_HOME: empty })
      expect(result.code).toBe(1)
      expect(result.stderr).toContain(`no database at ${join(empty, 'lango.db')}: nothing to back up`)
    } finally {
      await rm(empty, { recursive: true, force: true })
    }
  })
})
