import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import type { Register } from '../command.js'
import { CliError, EXIT } from '../errors.js'

/**
 * `lango backup <file>`: a consistent copy of the SQLite database, directly on the file (no server
 * needed; a running one goes on serving and writing), with SQLite's online backup API (ADR 0018).
 * On PostgreSQL it refuses and points to `pg_dump`.
 */
export const registerBackup: Register = (program, action) => {
  program
    .command('backup')
    .description(
      'copy the SQLite database to <file>, consistently, while the server runs (PostgreSQL: use pg_dump)',
    )
    .argument('<file>', 'the copy to write (its directory must exist)')
    .option('--force', 'replace <file> if it exists')
    .action(
      action(async (context, [file = ''], options) => {
        const config = await context.config()
        if (config.database.kind === 'postgres') {
          const { describePostgres } = await import('../../db/database.js')
          throw new CliError(
            'CLI_BACKUP_UNSUPPORTED',
            `lango backup copies the SQLite file; this server's database is PostgreSQL (${describePostgres(config.database.url)}): back it up with pg_dump, e.g. pg_dump --format=custom --file=lango.dump "$LANGO_DATABASE_URL", and restore it with pg_restore`,
            { data: { database: describePostgres(config.database.url) } },
          )
        }
        const source = config.database.url
        const destination = resolve(file)
        if (!existsSync(source))
          throw new CliError(
            'CLI_FILE_UNREADABLE',
            `no database at ${source}: nothing to back up (is LANGO_HOME the server's?)`,
            { data: { database: source } },
          )
        if (destination === resolve(source))
          throw new CliError('CLI_INVALID_OPTION', 'the backup must be another file than the database', {
            exitCode: EXIT.usage,
            data: { file: destination },
          })
        if (existsSync(destination) && options.force !== true)
          throw new CliError('CLI_INVALID_OPTION', `${destination} exists: give --force to replace it`, {
            exitCode: EXIT.usage,
            data: { file: destination },
          })
        const { backupSqlite } = await import('../../db/backup.js')
        const started = performance.now()
        let copied: Awaited<ReturnType<typeof backupSqlite>>
        try {
          copied = await backupSqlite(source, destination)
        } catch (error) {
          throw new CliError(
            'CLI_BACKUP_FAILED',
            `backing up ${source} to ${destination} failed: ${(error as Error).message}`,
            { cause: error, data: { database: source, file: destination } },
          )
        }
        const data = {
          status: 'ok',
          database: source,
          file: destination,
          bytes: copied.bytes,
          pages: copied.pages,
          integrity: 'ok',
          took_ms: Math.round(performance.now() - started),
        }
        return {
          data,
          render: (out) =>
            out.print(
              `${out.paint('green', 'backed up')} ${source} to ${destination} (${Math.ceil(data.bytes / 1024)} KiB, integrity ok)`,
            ),
        }
      }),
    )
}
