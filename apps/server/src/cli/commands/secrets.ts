import type { Register } from '../command.js'
import type { CommandContext } from '../context.js'
import { CliError, EXIT } from '../errors.js'
import { formatTime } from '../output.js'

/** The vault on the configured database, and how to close it. */
export interface OpenedVault {
  readonly vault: import('../../vault/vault.js').Vault
  close(): Promise<void>
}

/**
 * Opens the secrets vault of the configured database with `LANGO_PASSPHRASE` (or its `_FILE`; one scrypt
 * derivation, 1–2 s). The server may be running: SQLite's WAL lets both use the file.
 */
export async function openVault(context: CommandContext): Promise<OpenedVault> {
  const config = await context.config()
  const [{ openServerDatabase }, { Vault }, { createLogger }] = await Promise.all([
    import('../../app/database-features.js'),
    import('../../vault/vault.js'),
    import('../../logger.js'),
  ])
  const database = await openServerDatabase(config, createLogger({ level: 'warn' }))
  try {
    const vault = await Vault.open(database.db, { passphrase: config.vault.passphrase })
    return { vault, close: () => database.close() }
  } catch (error) {
    await database.close()
    throw error
  }
}

async function withVault<T>(
  context: CommandContext,
  use: (vault: OpenedVault['vault']) => Promise<T>,
): Promise<T> {
  const opened = await openVault(context)
  try {
    return await use(opened.vault)
  } finally {
    await opened.close()
  }
}

/** `lango secrets set|list|delete`: the vault, directly on the database file (no server needed). */
export const registerSecrets: Register = (program, action) => {
  const secrets = program
    .command('secrets')
    .description(
      'the secrets vault: commands use {{secret:NAME}} tokens, never values (needs LANGO_PASSPHRASE)',
    )

  secrets
    .command('set')
    .description(
      'store a secret: the value is read from stdin (one trailing newline removed) or a hidden prompt',
    )
    .argument('<name>', '1-64 letters, digits, _ . -')
    .action(
      action(async (context, [name = '']) => {
        const { SECRET_NAME_PATTERN } = await import('../../vault/vault.js')
        if (!SECRET_NAME_PATTERN.test(name))
          throw new CliError(
            'CLI_INVALID_OPTION',
            'a secret name is 1 to 64 characters of A-Z, a-z, 0-9, "_", "." and "-"',
            {
              exitCode: EXIT.usage,
            },
          )
        // Everything that can fail fast does so before the prompt: the configuration, the passphrase.
        await context.config()
        const passphrase = context.io.env.LANGO_PASSPHRASE
        if (passphrase === undefined || passphrase === '') {
          const { VaultError } = await import('../../vault/errors.js')
          throw new VaultError(
            'VAULT_NO_PASSPHRASE',
            'no passphrase for the secrets vault: set LANGO_PASSPHRASE to its passphrase (the first one given creates the vault)',
          )
        }
        // The value is read before the key is derived (1-2 s): a terminal then turns echo off as the
        // prompt appears, instead of echoing whatever is typed ahead while scrypt runs.
        const { readSecretValue } = await import('../../vault/read-secret.js')
        const value = await readSecretValue({
          stdin: context.io.stdin,
          isTTY: context.io.stdin.isTTY === true,
          prompt: `Value for ${name} (hidden): `,
        })
        const entry = await withVault(context, (vault) => vault.set(name, value))
        const data = { status: entry.created ? 'created' : 'updated', name: entry.name, token: entry.token }
        return {
          data,
          render: (out) =>
            out.print(`${out.paint('green', data.status)} secret ${data.name}; use it as ${data.token}`),
        }
      }),
    )

  secrets
    .command('list')
    .description('names and tokens of the stored secrets (never their values)')
    .action(
      action(async (context) => {
        const entries = await withVault(context, (vault) => vault.list())
        const data = {
          secrets: entries.map((entry) => ({
            name: entry.name,
            token: entry.token,
            created_at: new Date(entry.created_at).toISOString(),
            updated_at: new Date(entry.updated_at).toISOString(),
          })),
          count: entries.length,
        }
        return {
          data,
          render: (out) =>
            out.table(
              ['NAME', 'TOKEN', 'UPDATED'],
              data.secrets.map((entry) => [entry.name, entry.token, formatTime(entry.updated_at)]),
              'no secrets (store one with `lango secrets set NAME`)',
            ),
        }
      }),
    )

  secrets
    .command('delete')
    .description('remove a secret')
    .argument('<name>', 'secret name')
    .action(
      action(async (context, [name = '']) => {
        const deleted = await withVault(context, (vault) => vault.delete(name))
        if (!deleted) throw new CliError('CLI_NOT_FOUND', `no secret named ${name}`, { data: { name } })
        const data = { status: 'deleted', name }
        return { data, render: (out) => out.print(`${out.paint('gray', 'deleted')} secret ${name}`) }
      }),
    )
}
