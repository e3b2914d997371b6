import { randomBytes } from 'node:crypto'
import { open, rename, rm, stat } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import Database from '@lango/better-sqlite3'

/** What {@link backupSqlite} copied. */
export interface SqliteBackup {
  /** Pages copied (the database's size in pages at the instant of the copy). */
  readonly pages: number
  /** The copy's size in bytes. */
  readonly bytes: number
}

/** The most pages better-sqlite3 takes per step: every page of any real database in one step. */
const ALL_PAGES = 0x7fff_ffff

/**
 * Copies the SQLite database `source` to `destination` with SQLite's online backup API, while a
 * server may be using it (ADR 0018): a connection of its own that only reads copies every page in ONE backup step,
 * so the copy is one read transaction's snapshot (WAL: writers go on meanwhile; a write between
 * steps would restart a stepped copy, which then never ends under a busy server). The copy is
 * written beside `destination` first, switched to a rollback journal (one self-contained file),
 * checked with `PRAGMA integrity_check`, and only then renamed into place: a failed backup leaves
 * no file. The copy is created readable and writable by its owner only (0600). Throws the
 * driver's error, or `Error('integrity_check: …')`.
 */
export async function backupSqlite(source: string, destination: string): Promise<SqliteBackup> {
  const partial = join(
    dirname(destination),
    `.${basename(destination)}.partial-${randomBytes(6).toString('hex')}`,
  )
  // The copy holds everything the database does (the vault's ciphertext, conversations, results):
  // readable by its owner only, as the server's own file is. Created here, exclusively (never
  // through a link someone left at that name), empty, so SQLite writes into it and keeps its mode.
  await (await open(partial, 'wx', 0o600)).close()
  try {
    // Only reads (query_only), but opened read-write: the last connection to close removes the WAL
    // files, where a read-only one would leave them behind, owned by whoever ran the backup (root
    // under sudo: the server could then not open its own database).
    const database = new Database(source, { fileMustExist: true })
    let pages: number
    try {
      database.pragma('busy_timeout = 5000')
      database.pragma('query_only = ON')
      pages = (await database.backup(partial, { progress: () => ALL_PAGES })).totalPages
    } finally {
      database.close()
    }
    const copy = new Database(partial)
    try {
      copy.pragma('journal_mode = DELETE')
      const check = copy.pragma('integrity_check', { simple: true })
      if (check !== 'ok') throw new Error(`integrity_check: ${String(check)}`)
    } finally {
      copy.close()
    }
    await rename(partial, destination)
    return { pages, bytes: (await stat(destination)).size }
  } finally {
    await Promise.all(
      ['', '-journal', '-wal', '-shm'].map((suffix) => rm(`${partial}${suffix}`, { force: true })),
    )
  }
}
