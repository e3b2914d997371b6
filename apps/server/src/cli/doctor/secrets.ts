import { MIN_SECRET_LENGTH } from '@lango/exec'
import { configSecrets, tooShortToMask } from '../../config/redact.js'
import type { ServerConfig } from '../../config/types.js'
import type { CheckResult } from './check.js'

/**
 * Every secret the configuration holds is long enough to mask (SECURITY.md SEC-4): a shorter one
 * is printed in clear by any command the server runs that reads it, as `lango serve` warns at start.
 */
export function checkSecretLengths(config: ServerConfig): CheckResult {
  const short = tooShortToMask(configSecrets(config))
  if (short.length === 0)
    return { name: 'secret lengths', status: 'ok', message: `every configured secret is long enough to mask` }
  return {
    name: 'secret lengths',
    status: 'warn',
    message: `${short.join(', ')} ${short.length === 1 ? 'is' : 'are'} shorter than ${MIN_SECRET_LENGTH} characters: too short to mask, so a command the server runs that prints ${short.length === 1 ? 'it' : 'one'} shows it in clear`,
    fix: `use a value of at least ${MIN_SECRET_LENGTH} characters (a long random token: openssl rand -hex 32)`,
    details: { settings: short, minLength: MIN_SECRET_LENGTH },
  }
}

/** Stored secrets can be opened: LANGO_PASSPHRASE is set when there are any. */
export function checkSecrets(secrets: number, config: ServerConfig): CheckResult {
  if (secrets > 0 && config.vault.passphrase === undefined)
    return {
      name: 'secrets',
      status: 'warn',
      message: `${secrets} secret${secrets === 1 ? '' : 's'} stored, but LANGO_PASSPHRASE is not set`,
      fix: 'set LANGO_PASSPHRASE for the server: commands using {{secret:NAME}} fail without it',
    }
  return {
    name: 'secrets',
    status: 'ok',
    message:
      secrets === 0
        ? 'no secrets stored'
        : `${secrets} secret${secrets === 1 ? '' : 's'} stored; LANGO_PASSPHRASE is set (\`lango secrets list\` checks it)`,
  }
}

/** How many secrets the vault holds (none when its table does not exist yet). */
export function countSecrets(database: import('@lango/better-sqlite3').Database): number {
  const exists = database
    .prepare("select 1 from sqlite_master where type = 'table' and name = 'vault_secrets'")
    .get()
  if (exists === undefined) return 0
  return (database.prepare('select count(*) as n from vault_secrets').get() as { n: number }).n
}
