/**
 * Terminology
 * - secret: a named value (`API`, `github.token`) stored encrypted in `vault_secrets`; commands
 *   name it with the reference token `{{secret:NAME}}`, which `@lango/exec` resolves through
 *   {@link Vault.resolve} right before spawning.
 * - passphrase: the master passphrase (`LANGO_PASSPHRASE`). The key is derived from it with scrypt
 *   (STACK.md "secrets": N=2^17, r=8, p=1) once per process and vault.
 * - key-check value: a constant encrypted with the key when the vault is created, so a wrong
 *   passphrase is one clear error at open instead of a corrupt-looking secret later.
 * - associated data: every value is sealed with AES-256-GCM under `secret:NAME`, so a ciphertext
 *   copied to another name does not decrypt.
 */
import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createSecretKey,
  type KeyObject,
  randomBytes,
  scrypt,
} from 'node:crypto'
import { MIN_SECRET_LENGTH, type RefStore } from '@lango/exec'
import type { Kysely, Migration } from 'kysely'
import * as v from 'valibot'
import type { DatabaseFeature } from '../db/database.js'
import { runMigrations } from '../db/migrations.js'
import { VaultError } from './errors.js'

export { VaultError } from './errors.js'

/** `vault_secrets`: one row per secret; nonce, ciphertext and tag are base64 text (portable). */
interface VaultSecretsTable {
  name: string
  nonce: string
  ciphertext: string
  tag: string
  /** Epoch milliseconds (`bigint`; PostgreSQL drivers return strings, which the vault coerces). */
  created_at: number
  updated_at: number
}

/** `vault_meta`: `kdf` (scrypt parameters and salt, JSON) and `key_check` (sealed constant, JSON). */
interface VaultMetaTable {
  key: string
  value: string
}

/** The tables the vault owns. Hosts need not declare them: the vault narrows any handle itself. */
export interface VaultDatabase {
  vault_secrets: VaultSecretsTable
  vault_meta: VaultMetaTable
}

/** The migration table the vault always uses (kysely: "ALWAYS use the same value"). */
const VAULT_MIGRATION_TABLE = 'vault_migrations'

/** Migrations of the vault, runnable on SQLite and PostgreSQL. */
export const vaultMigrations: Readonly<Record<string, Migration>> = Object.freeze({
  '0001_create_vault_tables': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('vault_secrets')
        .addColumn('name', 'text', (column) => column.primaryKey())
        .addColumn('nonce', 'text', (column) => column.notNull())
        .addColumn('ciphertext', 'text', (column) => column.notNull())
        .addColumn('tag', 'text', (column) => column.notNull())
        .addColumn('created_at', 'bigint', (column) => column.notNull())
        .addColumn('updated_at', 'bigint', (column) => column.notNull())
        .execute()
      await db.schema
        .createTable('vault_meta')
        .addColumn('key', 'text', (column) => column.primaryKey())
        .addColumn('value', 'text', (column) => column.notNull())
        .execute()
    },
    async down(db: Kysely<unknown>): Promise<void> {
      await db.schema.dropTable('vault_meta').execute()
      await db.schema.dropTable('vault_secrets').execute()
    },
  },
})

/**
 * Creates or upgrades the vault's tables with kysely's Migrator and the fixed migration table
 * `vault_migrations`; throws if a migration failed.
 * @example await migrateVault(db)
 */
export async function migrateVault<DB>(db: Kysely<DB>): Promise<void> {
  await runMigrations(db, 'vault', VAULT_MIGRATION_TABLE, vaultMigrations)
}

/** The vault's share of the server's database (its tables and migrations). */
export const vaultTables: DatabaseFeature<VaultDatabase> = {
  name: 'vault',
  migrationTable: VAULT_MIGRATION_TABLE,
  migrations: vaultMigrations,
  migrate: migrateVault,
}

/** scrypt cost parameters. */
export interface KdfParams {
  /** CPU/memory cost, a power of two. */
  readonly N: number
  /** Block size. */
  readonly r: number
  /** Parallelisation. */
  readonly p: number
}

/** OWASP's scrypt parameters (STACK.md "secrets"): one derivation takes 1–2 s and 128 MiB. */
export const DEFAULT_KDF: KdfParams = Object.freeze({ N: 2 ** 17, r: 8, p: 1 })

/** Largest value accepted, in UTF-8 bytes. */
export const MAX_SECRET_BYTES = 64 * 1024

/** What a secret name may look like. */
export const SECRET_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/

const NAME_RULE = '1 to 64 characters of A-Z, a-z, 0-9, "_", "." and "-"'
/** scrypt's memory limit: N=2^17, r=8 needs 128 MiB, above Node's 32 MiB default. */
const SCRYPT_MAXMEM = 256 * 1024 * 1024
const KEY_BYTES = 32
const NONCE_BYTES = 12
const TAG_BYTES = 16
const KEY_CHECK_PLAINTEXT = 'lango-vault-key-check-v1'
/** Associated data of the key-check value; `:` is not allowed in names, so no secret shares it. */
const KEY_CHECK_AAD = 'meta:key-check'

/** A stored secret as listed: its name and token, never its value. */
export interface SecretEntry {
  readonly name: string
  /** `{{secret:NAME}}`, what commands use. */
  readonly token: string
  /** Epoch milliseconds. */
  readonly created_at: number
  readonly updated_at: number
}

/** Options of {@link Vault.open}. */
export interface VaultOptions {
  /** The master passphrase (`LANGO_PASSPHRASE`); a missing or empty one is `VAULT_NO_PASSPHRASE`. */
  readonly passphrase: string | undefined
  /** Where timestamps come from (default: the system clock). */
  readonly clock?: { now(): Date }
  /**
   * scrypt cost for a vault created by this open (default {@link DEFAULT_KDF}); an existing vault
   * always uses the parameters it was created with. Lower costs are for tests only.
   */
  readonly kdf?: KdfParams
}

/** The reference token of a secret: `{{secret:NAME}}`. */
function secretToken(name: string): string {
  return `{{secret:${name}}}`
}

const TOKEN_PATTERN = /^\{\{secret:([^}]*)\}\}$/

/**
 * The secrets vault: values sealed with AES-256-GCM in `vault_secrets`, under a key derived from
 * the passphrase. Implements `@lango/exec`'s `RefStore`, so `run(command, { refStore: vault })`
 * resolves `{{secret:NAME}}` and masks every value this process has decrypted.
 * @example
 * await migrateVault(db)
 * const vault = await Vault.open(db, { passphrase: process.env.LANGO_PASSPHRASE })
 * await vault.set('API', 'sk-live-0123456789')
 * await run('curl -H "Authorization: Bearer {{secret:API}}" …', { refStore: vault })
 */
export class Vault implements RefStore {
  /** The scrypt parameters this vault's key was derived with. */
  readonly kdfParams: KdfParams
  readonly #db: Kysely<VaultDatabase>
  readonly #key: KeyObject
  readonly #clock: { now(): Date }
  /** Values decrypted or stored by this process, with the sealed row they came from. */
  readonly #held = new Map<string, { readonly sealed: string; readonly value: string }>()

  private constructor(
    db: Kysely<VaultDatabase>,
    key: KeyObject,
    kdfParams: KdfParams,
    clock: { now(): Date },
  ) {
    this.#db = db
    this.#key = key
    this.kdfParams = kdfParams
    this.#clock = clock
  }

  /**
   * Opens the vault in `db` (run {@link migrateVault} first). The first open creates the salt and
   * the key-check value; later opens derive the key (once per process) and check it.
   * @throws VaultError `VAULT_NO_PASSPHRASE`, `VAULT_WRONG_PASSPHRASE`, `VAULT_INVALID_OPTION`,
   * `VAULT_CORRUPT` (unreadable `vault_meta`).
   */
  static async open<DB>(db: Kysely<DB>, options: VaultOptions): Promise<Vault> {
    const { passphrase } = options
    if (typeof passphrase !== 'string' || passphrase === '')
      throw new VaultError(
        'VAULT_NO_PASSPHRASE',
        'no passphrase for the secrets vault: set LANGO_PASSPHRASE to its passphrase (the first one given creates the vault)',
      )
    const vaultDb = db as unknown as Kysely<VaultDatabase>
    const kdf = await readOrCreateKdf(vaultDb, checkKdfParams(options.kdf ?? DEFAULT_KDF))
    const key = await deriveKey(passphrase, kdf)
    await checkOrCreateKeyCheck(vaultDb, key)
    const clock = options.clock ?? { now: () => new Date() }
    return new Vault(vaultDb, key, Object.freeze({ N: kdf.N, r: kdf.r, p: kdf.p }), clock)
  }

  /**
   * Stores `value` under `name`, replacing any earlier value (its `created_at` is kept).
   * @throws VaultError `VAULT_INVALID_NAME`, `VAULT_INVALID_VALUE`, `VAULT_VALUE_TOO_SHORT`,
   * `VAULT_VALUE_TOO_LARGE`.
   */
  async set(name: string, value: string): Promise<SecretEntry & { readonly created: boolean }> {
    checkName(name)
    const plaintext = checkValue(name, value)
    const sealed = seal(this.#key, plaintext, secretAad(name))
    const now = this.#clock.now().getTime()
    // Writes only, the insert first: on SQLite a transaction that read first could not take the
    // write lock once another process (the server beside `lango secrets set`) had written meanwhile
    // (SQLITE_BUSY at once, past busy_timeout).
    const existing = await this.#db.transaction().execute(async (trx) => {
      const inserted = await trx
        .insertInto('vault_secrets')
        .values({ name, ...sealed, created_at: now, updated_at: now })
        .onConflict((conflict) => conflict.column('name').doNothing())
        .returning('name')
        .executeTakeFirst()
      if (inserted !== undefined) return undefined
      return trx
        .updateTable('vault_secrets')
        .set({ ...sealed, updated_at: now })
        .where('name', '=', name)
        .returning('created_at')
        .executeTakeFirstOrThrow()
    })
    this.#held.set(name, { sealed: fingerprint(sealed), value })
    return {
      name,
      token: secretToken(name),
      created_at: existing === undefined ? now : Number(existing.created_at),
      updated_at: now,
      created: existing === undefined,
    }
  }

  /**
   * The value of `name`, or `undefined` when there is no such secret.
   * @throws VaultError `VAULT_INVALID_NAME`, `VAULT_CORRUPT` (the stored row does not decrypt).
   */
  async get(name: string): Promise<string | undefined> {
    checkName(name)
    const row = await this.#db
      .selectFrom('vault_secrets')
      .select(['nonce', 'ciphertext', 'tag'])
      .where('name', '=', name)
      .executeTakeFirst()
    if (row === undefined) {
      this.#held.delete(name)
      return undefined
    }
    const sealed = fingerprint(row)
    const held = this.#held.get(name)
    if (held?.sealed === sealed) return held.value
    const plaintext = unseal(this.#key, row, secretAad(name))
    const value = plaintext === undefined ? undefined : decodeUtf8(plaintext)
    if (value === undefined) {
      this.#held.delete(name)
      throw new VaultError(
        'VAULT_CORRUPT',
        `secret ${name} does not decrypt: its stored data was changed or belongs to another name; store it again with \`lango secrets set ${name}\``,
        { data: { name } },
      )
    }
    this.#held.set(name, { sealed, value })
    return value
  }

  /** Every secret's name, token and times, by name; never values. */
  async list(): Promise<SecretEntry[]> {
    const rows = await this.#db
      .selectFrom('vault_secrets')
      .select(['name', 'created_at', 'updated_at'])
      .orderBy('name')
      .execute()
    return rows.map((row) => ({
      name: row.name,
      token: secretToken(row.name),
      created_at: Number(row.created_at),
      updated_at: Number(row.updated_at),
    }))
  }

  /**
   * Removes `name`; true when it existed.
   * @throws VaultError `VAULT_INVALID_NAME`.
   */
  async delete(name: string): Promise<boolean> {
    checkName(name)
    const result = await this.#db.deleteFrom('vault_secrets').where('name', '=', name).executeTakeFirst()
    this.#held.delete(name)
    return result.numDeletedRows > 0n
  }

  /**
   * `RefStore`: the value behind `{{secret:NAME}}`; `undefined` for unknown names and other token
   * kinds (`{{decrypt:…}}`), which then stay literal.
   * @throws VaultError `VAULT_CORRUPT` when the stored row does not decrypt.
   */
  async resolve(token: string): Promise<string | undefined> {
    const name = TOKEN_PATTERN.exec(token)?.[1]
    if (name === undefined || !SECRET_NAME_PATTERN.test(name)) return undefined
    return this.get(name)
  }

  /**
   * `RefStore`: every value this process has decrypted or stored, labelled with its name, so exec
   * masks it as `[secret:NAME]` even where a command reaches it without its token.
   */
  *heldValues(): Iterable<{ readonly label: string; readonly value: string }> {
    for (const [name, held] of this.#held) yield { label: name, value: held.value }
  }
}

function checkName(name: string): void {
  if (typeof name !== 'string' || !SECRET_NAME_PATTERN.test(name))
    throw new VaultError('VAULT_INVALID_NAME', `a secret name is ${NAME_RULE}`, {
      data: { accepted: SECRET_NAME_PATTERN.source },
    })
}

/** The value's UTF-8 bytes after checking type, content and size; messages name the secret only. */
function checkValue(name: string, value: string): Buffer {
  if (typeof value !== 'string' || value.includes('\0'))
    throw new VaultError('VAULT_INVALID_VALUE', `the value of ${name} must be text without NUL characters`, {
      data: { name },
    })
  if (value.length < MIN_SECRET_LENGTH)
    throw new VaultError(
      'VAULT_VALUE_TOO_SHORT',
      `the value of ${name} is shorter than ${MIN_SECRET_LENGTH} characters; output masking would reveal it, so store a longer secret`,
      { data: { name, minLength: MIN_SECRET_LENGTH } },
    )
  const bytes = Buffer.from(value, 'utf8')
  if (bytes.length > MAX_SECRET_BYTES)
    throw new VaultError(
      'VAULT_VALUE_TOO_LARGE',
      `the value of ${name} is ${bytes.length} bytes; at most ${MAX_SECRET_BYTES} bytes (64 KiB) are accepted`,
      { data: { name, bytes: bytes.length, maxBytes: MAX_SECRET_BYTES } },
    )
  // Lone UTF-16 surrogates would come back as U+FFFD: refuse instead of storing a different value.
  if (bytes.toString('utf8') !== value)
    throw new VaultError('VAULT_INVALID_VALUE', `the value of ${name} is not valid Unicode text`, {
      data: { name },
    })
  return bytes
}

function checkKdfParams(params: KdfParams): KdfParams {
  const { N, r, p } = params
  const valid =
    Number.isInteger(N) &&
    Number.isInteger(r) &&
    Number.isInteger(p) &&
    N >= 2 &&
    (N & (N - 1)) === 0 &&
    r >= 1 &&
    r <= 32 &&
    p >= 1 &&
    p <= 16 &&
    128 * N * r <= SCRYPT_MAXMEM
  if (!valid)
    throw new VaultError(
      'VAULT_INVALID_OPTION',
      'scrypt parameters: N is a power of two, r is 1 to 32, p is 1 to 16, and 128·N·r is at most 256 MiB',
      { data: { N, r, p } },
    )
  return params
}

function secretAad(name: string): string {
  return `secret:${name}`
}

interface Sealed {
  readonly nonce: string
  readonly ciphertext: string
  readonly tag: string
}

function seal(key: KeyObject, plaintext: Buffer, aad: string): Sealed {
  const nonce = randomBytes(NONCE_BYTES)
  const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES })
  cipher.setAAD(Buffer.from(aad, 'utf8'))
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()])
  return {
    nonce: nonce.toString('base64'),
    ciphertext: ciphertext.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
  }
}

/** The plaintext, or undefined when the sealed data is malformed or does not authenticate. */
function unseal(key: KeyObject, sealed: Sealed, aad: string): Buffer | undefined {
  const nonce = decodeBase64(sealed.nonce)
  const ciphertext = decodeBase64(sealed.ciphertext)
  const tag = decodeBase64(sealed.tag)
  if (nonce?.length !== NONCE_BYTES || tag?.length !== TAG_BYTES || ciphertext === undefined) return undefined
  const decipher = createDecipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES })
  decipher.setAAD(Buffer.from(aad, 'utf8'))
  decipher.setAuthTag(tag)
  try {
    return Buffer.concat([decipher.update(ciphertext), decipher.final()])
  } catch {
    // GCM authentication failed: the caller reports it as a wrong passphrase or a corrupt secret.
    return undefined
  }
}

/** Strict base64: Node's decoder skips junk, so a value must encode back to itself. */
function decodeBase64(text: unknown): Buffer | undefined {
  if (typeof text !== 'string') return undefined
  const bytes = Buffer.from(text, 'base64')
  return bytes.toString('base64') === text ? bytes : undefined
}

function decodeUtf8(bytes: Buffer): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes)
  } catch {
    // Not UTF-8: authenticated bytes that no vault wrote; the caller reports the secret as corrupt.
    return undefined
  }
}

function fingerprint(sealed: Sealed): string {
  return `${sealed.nonce}.${sealed.ciphertext}.${sealed.tag}`
}

const KDF_META = 'kdf'
const KEY_CHECK_META = 'key_check'

const base64Text = v.pipe(v.string(), v.regex(/^[A-Za-z0-9+/]*={0,2}$/))
const KdfRecordSchema = v.object({
  algorithm: v.literal('scrypt'),
  N: v.number(),
  r: v.number(),
  p: v.number(),
  salt: base64Text,
})
const SealedSchema = v.object({ nonce: base64Text, ciphertext: base64Text, tag: base64Text })

interface KdfRecord extends KdfParams {
  readonly salt: Buffer
}

function corruptMeta(key: string): VaultError {
  return new VaultError(
    'VAULT_CORRUPT',
    `the vault's ${key} record in vault_meta is unreadable; the vault cannot be opened`,
    { data: { key } },
  )
}

async function readMeta(db: Kysely<VaultDatabase>, key: string): Promise<string | undefined> {
  const row = await db.selectFrom('vault_meta').select('value').where('key', '=', key).executeTakeFirst()
  return row?.value
}

/** Inserts a meta record unless one exists (a concurrent first open wins), then reads the stored one. */
async function insertMetaOnce(db: Kysely<VaultDatabase>, key: string, value: string): Promise<string> {
  await db
    .insertInto('vault_meta')
    .values({ key, value })
    .onConflict((conflict) => conflict.column('key').doNothing())
    .execute()
  const stored = await readMeta(db, key)
  if (stored === undefined) throw corruptMeta(key)
  return stored
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    // Reported by the caller as an unreadable meta record.
    return undefined
  }
}

async function readOrCreateKdf(db: Kysely<VaultDatabase>, requested: KdfParams): Promise<KdfRecord> {
  let stored = await readMeta(db, KDF_META)
  if (stored === undefined) {
    const record = { algorithm: 'scrypt', ...requested, salt: randomBytes(16).toString('base64') }
    stored = await insertMetaOnce(db, KDF_META, JSON.stringify(record))
  }
  const parsed = v.safeParse(KdfRecordSchema, parseJson(stored))
  const salt = parsed.success ? decodeBase64(parsed.output.salt) : undefined
  if (!parsed.success || salt === undefined || salt.length < 16) throw corruptMeta(KDF_META)
  const { N, r, p } = parsed.output
  try {
    checkKdfParams({ N, r, p })
  } catch (error) {
    throw new VaultError('VAULT_CORRUPT', `the vault's kdf record in vault_meta has invalid parameters`, {
      cause: error,
      data: { key: KDF_META },
    })
  }
  return { N, r, p, salt }
}

async function checkOrCreateKeyCheck(db: Kysely<VaultDatabase>, key: KeyObject): Promise<void> {
  let stored = await readMeta(db, KEY_CHECK_META)
  if (stored === undefined) {
    const secrets = await db.selectFrom('vault_secrets').select('name').limit(1).execute()
    if (secrets.length > 0) throw corruptMeta(KEY_CHECK_META)
    const sealed = seal(key, Buffer.from(KEY_CHECK_PLAINTEXT, 'utf8'), KEY_CHECK_AAD)
    stored = await insertMetaOnce(db, KEY_CHECK_META, JSON.stringify(sealed))
  }
  const parsed = v.safeParse(SealedSchema, parseJson(stored))
  if (!parsed.success) throw corruptMeta(KEY_CHECK_META)
  const plaintext = unseal(key, parsed.output, KEY_CHECK_AAD)
  if (plaintext?.toString('utf8') !== KEY_CHECK_PLAINTEXT)
    throw new VaultError(
      'VAULT_WRONG_PASSPHRASE',
      'the passphrase does not open this vault (LANGO_PASSPHRASE)',
    )
}

/**
 * Keys derived in this process, by an HMAC of (salt, parameters, passphrase): scrypt runs once per
 * passphrase and vault, however often the vault is opened. Bounded; failed derivations are dropped.
 */
const derivedKeys = new Map<string, Promise<KeyObject>>()
const MAX_DERIVED_KEYS = 8

function deriveKey(passphrase: string, kdf: KdfRecord): Promise<KeyObject> {
  const normalized = passphrase.normalize('NFC')
  const id = createHmac('sha256', kdf.salt)
    .update(`scrypt:${kdf.N}:${kdf.r}:${kdf.p}:`)
    .update(normalized, 'utf8')
    .digest('base64')
  const cached = derivedKeys.get(id)
  if (cached !== undefined) return cached
  const derived = new Promise<KeyObject>((resolve, reject) => {
    scrypt(
      normalized,
      kdf.salt,
      KEY_BYTES,
      { N: kdf.N, r: kdf.r, p: kdf.p, maxmem: SCRYPT_MAXMEM },
      (error, key) => {
        if (error === null) resolve(createSecretKey(key))
        else
          reject(
            new VaultError('VAULT_INVALID_OPTION', 'scrypt refused the vault key parameters', {
              cause: error,
              data: { N: kdf.N, r: kdf.r, p: kdf.p },
            }),
          )
      },
    )
  })
  derivedKeys.set(id, derived)
  derived.catch(() => derivedKeys.delete(id))
  if (derivedKeys.size > MAX_DERIVED_KEYS) {
    const oldest = derivedKeys.keys().next().value
    if (oldest !== undefined) derivedKeys.delete(oldest)
  }
  return derived
}
