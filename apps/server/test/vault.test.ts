import { createDecipheriv, scrypt } from 'node:crypto'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { run } from '@lango/exec'
import { invokeTool } from '@lango/tools'
import Database from 'better-sqlite3'
import {
  DummyDriver,
  Kysely,
  type KyselyPlugin,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  SqliteDialect,
  sql,
} from 'kysely'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { readSecretValue } from '../src/vault/read-secret.js'
import { createSecretsTools } from '../src/vault/secrets-tool.js'
import {
  DEFAULT_KDF,
  MAX_SECRET_BYTES,
  migrateVault,
  Vault,
  type VaultDatabase,
  VaultError,
  vaultMigrations,
} from '../src/vault/vault.js'
import { postgresSchemas } from './fixtures/postgres-schema.js'

// Every scrypt derivation (the vault's and this file's own), counted: the vault derives its key
// once per process, which the count shows on any machine, however busy.
const derivations = vi.hoisted(() => ({ count: 0 }))
vi.mock('node:crypto', async (importOriginal) => {
  const crypto = await importOriginal<typeof import('node:crypto')>()
  return {
    ...crypto,
    scrypt: (...args: Parameters<typeof crypto.scrypt>) => {
      derivations.count++
      return crypto.scrypt(...args)
    },
  }
})

// biome-ignore lint/suspicious/noExplicitAny: the vault accepts any host handle, as the server's is
type AnyDatabase = Kysely<any>

/** A cheap scrypt cost for tests; one test below proves the default is OWASP's N=2^17. */
const FAST = { N: 2 ** 10, r: 8, p: 1 }
const PASSPHRASE = 'correct horse battery staple'
const API_VALUE = 'sk-live-CANARY-7f3a9b2c41d0'

/** A clock tests move by hand. */
function manualClock(start = Date.UTC(2025, 0, 1)) {
  let now = start
  return {
    now: () => new Date(now),
    advance(ms: number) {
      now += ms
    },
  }
}

async function expectVaultError(promise: Promise<unknown>, code: string): Promise<VaultError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  )
  expect(VaultError.is(error), `expected a VaultError ${code}`).toBe(true)
  expect((error as VaultError).code).toBe(code)
  return error as VaultError
}

/** A real SQLite file in a temp dir (WAL, as the server opens it), migrated. */
async function sqliteDatabase(): Promise<{ db: AnyDatabase; file: string; dir: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'lango-vault-'))
  const file = join(dir, 'lango.db')
  const database = new Database(file)
  database.pragma('journal_mode = WAL')
  const db = new Kysely<VaultDatabase>({ dialect: new SqliteDialect({ database }) })
  await migrateVault(db)
  return { db, file, dir }
}

interface Backend {
  readonly name: string
  /** A fresh, migrated, empty database and its clean-up. */
  open(): Promise<{ db: AnyDatabase; close(): Promise<void> }>
}

const sqliteBackend: Backend = {
  name: 'SQLite',
  async open() {
    const { db, dir } = await sqliteDatabase()
    return {
      db,
      async close() {
        await db.destroy()
        await rm(dir, { recursive: true, force: true })
      },
    }
  },
}

/** PostgreSQL at 127.0.0.1:5432 (test/fixtures/postgres-schema.ts): a fresh schema per database. */
async function postgresBackend(): Promise<Backend | undefined> {
  const { open } = await postgresSchemas<VaultDatabase>('vault_test')
  if (open === undefined) return undefined
  return {
    name: 'PostgreSQL',
    async open() {
      const schema = await open()
      await migrateVault(schema.db)
      return { db: schema.db as AnyDatabase, close: () => schema.close() }
    },
  }
}

/** set, get, list, delete and resolve on one backend. */
function coreBehaviour(backend: () => Backend | undefined) {
  let opened: { db: AnyDatabase; close(): Promise<void> }
  beforeEach(async () => {
    const chosen = backend()
    if (chosen === undefined) throw new Error('backend unavailable')
    opened = await chosen.open()
  })
  afterEach(async () => {
    await opened.close()
  })

  it('round-trips values, keeps created_at on update, and lists tokens in name order', async () => {
    const clock = manualClock()
    const vault = await Vault.open(opened.db, { passphrase: PASSPHRASE, kdf: FAST, clock })
    const first = await vault.set('API', API_VALUE)
    expect(first).toEqual({
      name: 'API',
      token: '{{secret:API}}',
      created_at: clock.now().getTime(),
      updated_at: clock.now().getTime(),
      created: true,
    })
    const unicode = 'pässwörd-🔑-\n-second line'
    await vault.set('db.password-2', unicode)
    clock.advance(60_000)
    const updated = await vault.set('API', `${API_VALUE}-rotated`)
    expect(updated.created).toBe(false)
    expect(updated.updated_at - updated.created_at).toBe(60_000)

    // A second handle (no values cached) decrypts from the rows.
    const again = await Vault.open(opened.db, { passphrase: PASSPHRASE, kdf: FAST })
    expect(await again.get('API')).toBe(`${API_VALUE}-rotated`)
    expect(await again.get('db.password-2')).toBe(unicode)
    expect(await again.get('missing')).toBeUndefined()

    const listed = await again.list()
    expect(listed).toEqual([
      {
        name: 'API',
        token: '{{secret:API}}',
        created_at: first.created_at,
        updated_at: first.created_at + 60_000,
      },
      {
        name: 'db.password-2',
        token: '{{secret:db.password-2}}',
        created_at: first.created_at,
        updated_at: first.created_at,
      },
    ])
    expect(typeof listed[0]?.created_at).toBe('number')
    expect(JSON.stringify(listed)).not.toContain('sk-live')
    expect(JSON.stringify(listed)).not.toContain('pässwörd')
  })

  it('deletes: true once, false after; the value is gone from get, resolve, list and heldValues', async () => {
    const vault = await Vault.open(opened.db, { passphrase: PASSPHRASE, kdf: FAST })
    await vault.set('API', API_VALUE)
    await vault.set('OTHER', 'other-value-123')
    expect(await vault.delete('API')).toBe(true)
    expect(await vault.delete('API')).toBe(false)
    expect(await vault.get('API')).toBeUndefined()
    expect(await vault.resolve('{{secret:API}}')).toBeUndefined()
    expect((await vault.list()).map((entry) => entry.name)).toEqual(['OTHER'])
    expect([...vault.heldValues()].map((held) => held.label)).toEqual(['OTHER'])
  })

  it('resolves {{secret:NAME}} only; other token kinds and unknown names stay unresolved', async () => {
    const vault = await Vault.open(opened.db, { passphrase: PASSPHRASE, kdf: FAST })
    await vault.set('API', API_VALUE)
    expect(await vault.resolve('{{secret:API}}')).toBe(API_VALUE)
    expect(await vault.resolve('{{secret:NOPE}}')).toBeUndefined()
    expect(await vault.resolve('{{decrypt:API}}')).toBeUndefined()
    expect(await vault.resolve('{{secretfile:API}}')).toBeUndefined()
    expect(await vault.resolve('{{secret:bad name}}')).toBeUndefined()
    expect(await vault.resolve('API')).toBeUndefined()
    expect(await vault.resolve(' {{secret:API}}')).toBeUndefined()
  })

  it('a wrong passphrase is one clear error', async () => {
    const vault = await Vault.open(opened.db, { passphrase: PASSPHRASE, kdf: FAST })
    await vault.set('API', API_VALUE)
    const error = await expectVaultError(
      Vault.open(opened.db, { passphrase: 'not the passphrase', kdf: FAST }),
      'VAULT_WRONG_PASSPHRASE',
    )
    expect(error.message).toBe('the passphrase does not open this vault (LANGO_PASSPHRASE)')
  })
}

describe('vault on SQLite', () => {
  coreBehaviour(() => sqliteBackend)
})

// PostgreSQL runs the same core tests when the `pg` driver is installed (it is not a dependency yet).
const postgres = await postgresBackend()
describe.skipIf(postgres === undefined)('vault on PostgreSQL (pg driver, server at 127.0.0.1:5432)', () => {
  coreBehaviour(() => postgres)
})

describe('vault', () => {
  let db: AnyDatabase
  let file: string
  let dir: string
  beforeEach(async () => {
    ;({ db, file, dir } = await sqliteDatabase())
  })
  afterEach(async () => {
    await db.destroy()
    await rm(dir, { recursive: true, force: true })
  })

  async function rawRow(name: string) {
    const row = await db.selectFrom('vault_secrets').selectAll().where('name', '=', name).executeTakeFirst()
    if (row === undefined) throw new Error(`no row ${name}`)
    return row as { nonce: string; ciphertext: string; tag: string }
  }

  it('migrates idempotently into vault_ tables with its own migration table', async () => {
    await migrateVault(db)
    const tables = await sql<{
      name: string
    }>`select name from sqlite_master where type = 'table' order by name`.execute(db)
    expect(tables.rows.map((row) => row.name)).toEqual([
      'vault_meta',
      'vault_migrations',
      'vault_migrations_lock',
      'vault_secrets',
    ])
  })

  it('never writes a value or the passphrase to the database file or its WAL', async () => {
    const vault = await Vault.open(db, { passphrase: PASSPHRASE, kdf: FAST })
    const values = [API_VALUE, 'second-CANARY-value-0451', `long-${'x'.repeat(4000)}-CANARY-tail`]
    for (const [index, value] of values.entries()) await vault.set(`S${index}`, value)
    await vault.set('S0', `${API_VALUE}-v2`)
    const scan = async () => {
      const bytes = Buffer.concat([
        await readFile(file),
        await readFile(`${file}-wal`).catch(() => Buffer.alloc(0)),
      ])
      expect(bytes.length).toBeGreaterThan(0)
      // The names are there (sanity: the scan reads the right bytes) …
      expect(bytes.includes('vault_secrets')).toBe(true)
      expect(bytes.includes('S2')).toBe(true)
      // … and no value, no piece of one, no passphrase.
      for (const needle of ['CANARY', 'sk-live', PASSPHRASE, 'xxxxxxxxxxxxxxxx'])
        expect(bytes.includes(needle), `found ${needle}`).toBe(false)
    }
    expect((await readFile(`${file}-wal`)).length).toBeGreaterThan(0)
    await scan()
    // After a checkpoint the rows live in the main file.
    await sql`pragma wal_checkpoint(TRUNCATE)`.execute(db)
    await scan()
  })

  it('a ciphertext moved to another name does not decrypt (the name is associated data)', async () => {
    const vault = await Vault.open(db, { passphrase: PASSPHRASE, kdf: FAST })
    await vault.set('API', API_VALUE)
    await vault.set('OTHER', 'other-value-123')
    const { nonce, ciphertext, tag } = await rawRow('API')
    await db
      .updateTable('vault_secrets')
      .set({ nonce, ciphertext, tag })
      .where('name', '=', 'OTHER')
      .execute()
    await db
      .insertInto('vault_secrets')
      .values({ name: 'COPY', nonce, ciphertext, tag, created_at: 0, updated_at: 0 })
      .execute()

    for (const handle of [vault, await Vault.open(db, { passphrase: PASSPHRASE, kdf: FAST })]) {
      for (const name of ['OTHER', 'COPY']) {
        const error = await expectVaultError(handle.get(name), 'VAULT_CORRUPT')
        expect(error.data).toEqual({ name })
        expect(error.message).toContain(`secret ${name} does not decrypt`)
        expect(JSON.stringify(error.toJSON())).not.toContain('sk-live')
      }
      expect(await handle.get('API')).toBe(API_VALUE)
    }
  })

  it('detects tampering with the ciphertext, the tag or the nonce, also through resolve', async () => {
    const vault = await Vault.open(db, { passphrase: PASSPHRASE, kdf: FAST })
    await vault.set('API', API_VALUE)
    const original = await rawRow('API')
    const flip = (base64: string) => {
      const bytes = Buffer.from(base64, 'base64')
      bytes[0] = (bytes[0] ?? 0) ^ 1
      return bytes.toString('base64')
    }
    const tampered = [
      { ciphertext: flip(original.ciphertext) },
      { tag: flip(original.tag) },
      { nonce: flip(original.nonce) },
      { nonce: Buffer.alloc(8).toString('base64') },
      { ciphertext: `${original.ciphertext}!!` },
    ]
    for (const change of tampered) {
      await db
        .updateTable('vault_secrets')
        .set({ ...original, ...change })
        .where('name', '=', 'API')
        .execute()
      const error = await expectVaultError(vault.get('API'), 'VAULT_CORRUPT')
      expect(error.message).not.toContain(API_VALUE)
      await expectVaultError(vault.resolve('{{secret:API}}'), 'VAULT_CORRUPT')
    }
    // The held value of a tampered secret is dropped; restoring the row restores the value.
    expect([...vault.heldValues()]).toEqual([])
    await db.updateTable('vault_secrets').set(original).where('name', '=', 'API').execute()
    expect(await vault.get('API')).toBe(API_VALUE)
  })

  it('heldValues holds exactly the values this handle decrypted or stored, labelled by name', async () => {
    const writer = await Vault.open(db, { passphrase: PASSPHRASE, kdf: FAST })
    await writer.set('API', API_VALUE)
    await writer.set('OTHER', 'other-value-123')
    expect([...writer.heldValues()]).toEqual([
      { label: 'API', value: API_VALUE },
      { label: 'OTHER', value: 'other-value-123' },
    ])
    const reader = await Vault.open(db, { passphrase: PASSPHRASE, kdf: FAST })
    expect([...reader.heldValues()]).toEqual([])
    await reader.resolve('{{secret:API}}')
    expect([...reader.heldValues()]).toEqual([{ label: 'API', value: API_VALUE }])
    // A value changed by another process is decrypted again, not served stale from memory.
    await writer.set('API', 'api-value-rotated-9')
    expect(await reader.get('API')).toBe('api-value-rotated-9')
    expect([...reader.heldValues()]).toEqual([{ label: 'API', value: 'api-value-rotated-9' }])
  })

  it('list and the secrets_list tool show names and tokens, never values', async () => {
    const vault = await Vault.open(db, { passphrase: PASSPHRASE, kdf: FAST })
    await vault.set('API', API_VALUE)
    await vault.set('github.token', 'ghp_CANARY_0123456789')
    const [tool] = createSecretsTools({ vault })
    if (tool === undefined) throw new Error('no tool')
    expect(tool.name).toBe('secrets_list')
    expect(tool.safety).toBe('safe')
    expect(tool.jsonSchema).toMatchObject({ type: 'object', properties: {}, additionalProperties: false })
    const outcome = await invokeTool(tool, {})
    expect(outcome).toEqual({
      ok: true,
      result: {
        secrets: [
          { name: 'API', token: '{{secret:API}}' },
          { name: 'github.token', token: '{{secret:github.token}}' },
        ],
        count: 2,
      },
    })
    expect(JSON.stringify(outcome)).not.toMatch(/CANARY/)
    const extra = await invokeTool(tool, { name: 'API' })
    expect(extra.ok === false && extra.error.code).toBe('TOOL_INVALID_PARAMETERS')

    // A lazily opened vault: what opening throws is the call's error.
    const [lazy] = createSecretsTools({
      vault: () =>
        Promise.reject(new VaultError('VAULT_NO_PASSPHRASE', 'no secrets vault: set LANGO_PASSPHRASE')),
    })
    const failed = await invokeTool(lazy as NonNullable<typeof lazy>, {})
    expect(failed.ok === false && failed.error.reason).toBe('VAULT_NO_PASSPHRASE')
    const [ready] = createSecretsTools({ vault: async () => vault })
    expect(await invokeTool(ready as NonNullable<typeof ready>, {})).toMatchObject({
      ok: true,
      result: { count: 2 },
    })
  })

  it('exec: the command receives the value, the returned output shows [secret:NAME]', async () => {
    const writer = await Vault.open(db, { passphrase: PASSPHRASE, kdf: FAST })
    await writer.set('API', API_VALUE)
    await writer.set('OTHER', 'other-CANARY-value')
    // A fresh handle, as in a server that has not touched the secret yet.
    const vault = await Vault.open(db, { passphrase: PASSPHRASE, kdf: FAST })
    const result = await run('echo {{secret:API}} | tee printed.txt', { refStore: vault, cwd: dir })
    expect(result.exitCode).toBe(0)
    expect(result.stdout).toBe('[secret:API]\n')
    expect(result.command).toBe('echo {{secret:API}} | tee printed.txt')
    expect(await readFile(join(dir, 'printed.txt'), 'utf8')).toBe(`${API_VALUE}\n`)

    // A value held by this handle is masked even when the command does not name its token.
    expect(await vault.get('OTHER')).toBe('other-CANARY-value')
    const leaked = await run('cat printed.txt; printf %s other-CANARY-value', { refStore: vault, cwd: dir })
    expect(leaked.stdout).toBe('[secret:API]\n[secret:OTHER]')
  })

  it('refuses a missing passphrase with what to do', async () => {
    for (const passphrase of [undefined, '']) {
      const error = await expectVaultError(Vault.open(db, { passphrase, kdf: FAST }), 'VAULT_NO_PASSPHRASE')
      expect(error.message).toContain('set LANGO_PASSPHRASE')
    }
    // Nothing was created: the first real open still chooses the passphrase.
    expect(await db.selectFrom('vault_meta').selectAll().execute()).toEqual([])
  })

  it('refuses invalid names, naming what is accepted but not the name given', async () => {
    const vault = await Vault.open(db, { passphrase: PASSPHRASE, kdf: FAST })
    for (const name of ['', 'has space', 'a:b', '{{x}}', 'ü', 'n'.repeat(65), 'sk-live-value!']) {
      const error = await expectVaultError(vault.set(name, API_VALUE), 'VAULT_INVALID_NAME')
      expect(error.message).toBe('a secret name is 1 to 64 characters of A-Z, a-z, 0-9, "_", "." and "-"')
      expect(error.data).toEqual({ accepted: '^[A-Za-z0-9_.-]{1,64}$' })
      await expectVaultError(vault.get(name), 'VAULT_INVALID_NAME')
      await expectVaultError(vault.delete(name), 'VAULT_INVALID_NAME')
    }
    for (const name of ['A', 'a.B-c_9', 'n'.repeat(64)])
      expect((await vault.set(name, API_VALUE)).name).toBe(name)
  })

  it('bounds values: 8 characters to 64 KiB of UTF-8 text without NUL', async () => {
    const vault = await Vault.open(db, { passphrase: PASSPHRASE, kdf: FAST })
    await expectVaultError(vault.set('S', 'short12'), 'VAULT_VALUE_TOO_SHORT')
    expect((await vault.set('S', 'eight888')).created).toBe(true)
    const largest = 'é'.repeat(MAX_SECRET_BYTES / 2)
    await vault.set('BIG', largest)
    expect(await vault.get('BIG')).toBe(largest)
    const error = await expectVaultError(vault.set('BIG', `${largest}x`), 'VAULT_VALUE_TOO_LARGE')
    expect(error.data).toEqual({ name: 'BIG', bytes: MAX_SECRET_BYTES + 1, maxBytes: MAX_SECRET_BYTES })
    await expectVaultError(vault.set('S', 'with\0nul-char'), 'VAULT_INVALID_VALUE')
    await expectVaultError(vault.set('S', 'lone-\ud800-surrogate'), 'VAULT_INVALID_VALUE')
    await expectVaultError(vault.set('S', 12345678 as unknown as string), 'VAULT_INVALID_VALUE')
    expect(await vault.get('BIG')).toBe(largest)
  })

  it('errors serialise to { name, code, message, data } only, and carry the lango brand', async () => {
    const vault = await Vault.open(db, { passphrase: PASSPHRASE, kdf: FAST })
    await vault.set('API', API_VALUE)
    await db
      .updateTable('vault_secrets')
      .set({ tag: Buffer.alloc(16).toString('base64') })
      .execute()
    const error = await expectVaultError(
      (await Vault.open(db, { passphrase: PASSPHRASE, kdf: FAST })).get('API'),
      'VAULT_CORRUPT',
    )
    expect(error).toBeInstanceOf(Error)
    expect((error as unknown as Record<symbol, unknown>)[Symbol.for('lango.error')]).toBe(true)
    expect(Object.keys(error.toJSON()).sort()).toEqual(['code', 'data', 'message', 'name'])
    const json = JSON.stringify(error)
    expect(json).not.toMatch(/stack|cause|sk-live/)
    expect(VaultError.is({ name: 'VaultError' })).toBe(false)
  })

  it('an existing vault keeps its own scrypt parameters; bad parameters are refused', async () => {
    const created = await Vault.open(db, { passphrase: PASSPHRASE, kdf: FAST })
    await created.set('API', API_VALUE)
    const reopened = await Vault.open(db, { passphrase: PASSPHRASE, kdf: { N: 2 ** 11, r: 8, p: 1 } })
    expect(reopened.kdfParams).toEqual(FAST)
    expect(await reopened.get('API')).toBe(API_VALUE)
    for (const kdf of [
      { N: 1000, r: 8, p: 1 },
      { N: 2 ** 21, r: 8, p: 1 },
      { N: 2 ** 10, r: 0, p: 1 },
      { N: 2 ** 10, r: 8, p: 1.5 },
    ])
      await expectVaultError(Vault.open(db, { passphrase: PASSPHRASE, kdf }), 'VAULT_INVALID_OPTION')
  })

  it('unreadable vault_meta is VAULT_CORRUPT, never a fresh vault over old secrets', async () => {
    const vault = await Vault.open(db, { passphrase: PASSPHRASE, kdf: FAST })
    await vault.set('API', API_VALUE)
    await db.deleteFrom('vault_meta').where('key', '=', 'key_check').execute()
    const missing = await expectVaultError(
      Vault.open(db, { passphrase: 'another passphrase', kdf: FAST }),
      'VAULT_CORRUPT',
    )
    expect(missing.data).toEqual({ key: 'key_check' })
    await db.updateTable('vault_meta').set({ value: 'not json' }).where('key', '=', 'kdf').execute()
    const garbled = await expectVaultError(
      Vault.open(db, { passphrase: PASSPHRASE, kdf: FAST }),
      'VAULT_CORRUPT',
    )
    expect(garbled.data).toEqual({ key: 'kdf' })
  })

  it('concurrent first opens agree on one salt and one passphrase', async () => {
    const [a, b] = await Promise.all([
      Vault.open(db, { passphrase: PASSPHRASE, kdf: FAST }),
      Vault.open(db, { passphrase: PASSPHRASE, kdf: FAST }),
    ])
    await a.set('API', API_VALUE)
    expect(await b.get('API')).toBe(API_VALUE)
    expect(await db.selectFrom('vault_meta').select('key').orderBy('key').execute()).toEqual([
      { key: 'kdf' },
      { key: 'key_check' },
    ])

    const { db: other, dir: otherDir } = await sqliteDatabase()
    try {
      const outcomes = await Promise.allSettled([
        Vault.open(other, { passphrase: 'first passphrase', kdf: FAST }),
        Vault.open(other, { passphrase: 'second passphrase', kdf: FAST }),
      ])
      const codes = outcomes.map((outcome) =>
        outcome.status === 'fulfilled' ? 'opened' : (outcome.reason as VaultError).code,
      )
      expect(codes.sort()).toEqual(['VAULT_WRONG_PASSPHRASE', 'opened'])
    } finally {
      await other.destroy()
      await rm(otherDir, { recursive: true, force: true })
    }
  })

  it('set succeeds while another process writes to the database between its statements', async () => {
    // The server writes (heartbeats, runs) while `lango secrets set` runs beside it on the same file.
    const beside = new Database(file, { timeout: 0 })
    beside.exec('create table if not exists beside_writes (n integer)')
    let writes = 0
    const writeBeside: KyselyPlugin = {
      transformQuery(args) {
        // Before each statement the vault sends, the other connection commits a write when it can
        // (it cannot while the vault's transaction holds the write lock: it would wait for it).
        try {
          beside.prepare('insert into beside_writes (n) values (?)').run(writes + 1)
          writes++
        } catch (error) {
          if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw error
        }
        return args.node
      },
      transformResult: async (args) => args.result,
    }
    try {
      await Vault.open(db, { passphrase: PASSPHRASE, kdf: FAST })
      const vault = await Vault.open(db.withPlugin(writeBeside), { passphrase: PASSPHRASE, kdf: FAST })
      const created = await vault.set('API', API_VALUE)
      expect(created).toMatchObject({ created: true, name: 'API' })
      const updated = await vault.set('API', `${API_VALUE}-v2`)
      expect(updated).toMatchObject({ created: false, created_at: created.created_at })
      expect(await vault.get('API')).toBe(`${API_VALUE}-v2`)
      expect(writes).toBeGreaterThan(2)
    } finally {
      beside.close()
    }
  })

  it("uses OWASP's scrypt N=2^17, r=8, p=1 by default, derived once per process", async () => {
    expect(DEFAULT_KDF).toEqual({ N: 2 ** 17, r: 8, p: 1 })
    const before = derivations.count
    const vault = await Vault.open(db, { passphrase: 'default cost passphrase' })
    expect(derivations.count - before).toBe(1)
    expect(vault.kdfParams).toEqual({ N: 131072, r: 8, p: 1 })
    await vault.set('API', API_VALUE)

    // The key really is scrypt(N=2^17, r=8, p=1) of the passphrase and the stored salt.
    const meta = await db
      .selectFrom('vault_meta')
      .select('value')
      .where('key', '=', 'kdf')
      .executeTakeFirstOrThrow()
    const kdf = JSON.parse(meta.value) as { algorithm: string; N: number; r: number; p: number; salt: string }
    expect(kdf).toMatchObject({ algorithm: 'scrypt', N: 131072, r: 8, p: 1 })
    expect(Buffer.from(kdf.salt, 'base64')).toHaveLength(16)
    const key = await new Promise<Buffer>((resolve, reject) =>
      scrypt(
        'default cost passphrase',
        Buffer.from(kdf.salt, 'base64'),
        32,
        { N: 2 ** 17, r: 8, p: 1, maxmem: 256 * 1024 * 1024 },
        (error, derived) => (error === null ? resolve(derived) : reject(error)),
      ),
    )
    const row = await rawRow('API')
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(row.nonce, 'base64'))
    decipher.setAAD(Buffer.from('secret:API'))
    decipher.setAuthTag(Buffer.from(row.tag, 'base64'))
    const plaintext = Buffer.concat([
      decipher.update(Buffer.from(row.ciphertext, 'base64')),
      decipher.final(),
    ])
    expect(plaintext.toString('utf8')).toBe(API_VALUE)

    // Opening again in this process reuses the derived key: no second 1–2 s derivation.
    const again = derivations.count
    const reopened = await Vault.open(db, { passphrase: 'default cost passphrase' })
    expect(await reopened.get('API')).toBe(API_VALUE)
    expect(derivations.count).toBe(again)
  })
})

describe('PostgreSQL portability (compile only)', () => {
  it('migrations and queries compile to PostgreSQL with bigint times and ON CONFLICT upserts', async () => {
    const statements: string[] = []
    const db = new Kysely<VaultDatabase>({
      dialect: {
        createAdapter: () => new PostgresAdapter(),
        createDriver: () => new DummyDriver(),
        createIntrospector: (inner) => new PostgresIntrospector(inner),
        createQueryCompiler: () => new PostgresQueryCompiler(),
      },
      log: (event) => {
        statements.push(event.query.sql)
      },
    })
    for (const migration of Object.values(vaultMigrations)) await migration.up(db)
    const ddl = statements.join('\n')
    expect(ddl).toContain('create table "vault_secrets" ("name" text primary key')
    expect(ddl).toMatch(/"created_at" bigint not null, "updated_at" bigint not null/)
    expect(ddl).toContain('create table "vault_meta" ("key" text primary key, "value" text not null)')
    // Opening reaches the (empty) dummy driver's reads and its meta upsert before it fails.
    await Vault.open(db, { passphrase: PASSPHRASE, kdf: FAST }).catch(() => undefined)
    expect(statements.join('\n')).toContain(
      'insert into "vault_meta" ("key", "value") values ($1, $2) on conflict ("key") do nothing',
    )
  })
})

describe('readSecretValue', () => {
  async function piped(...chunks: (string | Buffer)[]): Promise<string> {
    const stdin = new PassThrough()
    const reading = readSecretValue({ stdin, isTTY: false, prompt: 'unused: ' })
    for (const chunk of chunks) stdin.write(chunk)
    stdin.end()
    return reading
  }

  it('strips exactly one trailing newline, \\n or \\r\\n, from piped input', async () => {
    expect(await piped('sk-value-1\n')).toBe('sk-value-1')
    expect(await piped('sk-value-1\r\n')).toBe('sk-value-1')
    expect(await piped('sk-value-1')).toBe('sk-value-1')
    expect(await piped('sk-value-1\n\n')).toBe('sk-value-1\n')
    expect(await piped('sk-value-1\r')).toBe('sk-value-1\r')
    expect(await piped(' spaced value \n')).toBe(' spaced value ')
    expect(await piped('-----BEGIN KEY-----\nabc\n-----END KEY-----\n')).toBe(
      '-----BEGIN KEY-----\nabc\n-----END KEY-----',
    )
    // A multi-byte character split across chunks.
    const euro = Buffer.from('€uro-value\n')
    expect(await piped(euro.subarray(0, 1), euro.subarray(1))).toBe('€uro-value')
  })

  it('bounds piped input to 64 KiB (plus the newline) and refuses non-UTF-8 bytes', async () => {
    const largest = 'v'.repeat(MAX_SECRET_BYTES)
    expect(await piped(largest, '\r\n')).toBe(largest)
    await expectVaultError(piped(largest, 'v'), 'VAULT_VALUE_TOO_LARGE')
    await expectVaultError(piped(largest, 'v\n'), 'VAULT_VALUE_TOO_LARGE')
    await expectVaultError(piped(largest, 'x'.repeat(MAX_SECRET_BYTES)), 'VAULT_VALUE_TOO_LARGE')
    await expectVaultError(piped(Buffer.from([0x73, 0xff, 0x0a])), 'VAULT_INVALID_VALUE')
  })

  function terminal() {
    const stdin = new PassThrough()
    const output = new PassThrough()
    let shown = ''
    output.on('data', (chunk: Buffer) => {
      shown += chunk.toString('utf8')
    })
    return { stdin, output, shown: () => shown }
  }

  it('on a terminal prompts on the given output and never echoes the value', async () => {
    const { stdin, output, shown } = terminal()
    const reading = readSecretValue({ stdin, output, isTTY: true, prompt: 'Value for API: ' })
    stdin.write('sk-typed')
    stdin.write('-secret-42\r')
    expect(await reading).toBe('sk-typed-secret-42')
    expect(shown()).toBe('Value for API: \n')
  })

  it('on a terminal, Ctrl-C or the end of input is VAULT_INPUT_CANCELED', async () => {
    const interrupted = terminal()
    const reading = readSecretValue({ ...interrupted, isTTY: true, prompt: '> ' })
    interrupted.stdin.write('partial-value\u0003')
    const error = await expectVaultError(reading, 'VAULT_INPUT_CANCELED')
    expect(error.message).not.toContain('partial')
    expect(interrupted.shown()).toBe('> \n')

    const ended = terminal()
    const pending = readSecretValue({ ...ended, isTTY: true, prompt: '> ' })
    ended.stdin.end('no-enter-value')
    await expectVaultError(pending, 'VAULT_INPUT_CANCELED')

    // Ctrl-D on an empty line, as a terminal sends it.
    const eof = terminal()
    const closed = readSecretValue({ ...eof, isTTY: true, prompt: '> ' })
    eof.stdin.write('\u0004')
    await expectVaultError(closed, 'VAULT_INPUT_CANCELED')
  })

  it('on a terminal, a line beyond 64 KiB is refused', async () => {
    const { stdin, output } = terminal()
    const reading = readSecretValue({ stdin, output, isTTY: true, prompt: '> ', maxBytes: 16 })
    stdin.write('x'.repeat(40))
    await expectVaultError(reading, 'VAULT_VALUE_TOO_LARGE')
    const exact = terminal()
    const fits = readSecretValue({ ...exact, isTTY: true, prompt: '> ', maxBytes: 16 })
    exact.stdin.write(`${'y'.repeat(16)}\n`)
    expect(await fits).toBe('y'.repeat(16))
  })
})
