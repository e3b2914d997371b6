import type { RefStore } from '@lango/exec'
import type { ConfigSecret } from '../config/redact.js'
import type { Logger } from '../logger.js'
import { Vault, VaultError } from '../vault/vault.js'
import type { ServerDatabase } from './database-features.js'

/** The exec `RefStore` over the vault, and the vault itself (the secrets tools). */
export type LazyVault = RefStore & { readonly vault: () => Promise<Vault> }

/**
 * The vault as the exec `RefStore`, opened in the background: scrypt takes 1–2 s, which start-up
 * does not wait for. Without `LANGO_PASSPHRASE` there is no vault and tokens pass through
 * literally; with a wrong one a command naming `{{secret:…}}` fails with the vault's clear error.
 * Its held values, which exec masks in all output, include the configuration's own secrets.
 */
export function lazyVault(
  database: ServerDatabase,
  passphrase: string | undefined,
  logger: Logger,
  configured: readonly ConfigSecret[],
): LazyVault {
  let opened: Vault | undefined
  const opening =
    passphrase === undefined || passphrase === ''
      ? undefined
      : Vault.open(database.db, { passphrase }).then((vault) => {
          opened = vault
          return vault
        })
  opening?.catch((error) => logger.error('secrets vault unavailable', { error }))
  const vault = async (): Promise<Vault> => {
    if (opening === undefined)
      throw new VaultError('VAULT_NO_PASSPHRASE', 'no secrets vault: set LANGO_PASSPHRASE for the server')
    return opening
  }
  return {
    vault,
    async resolve(token) {
      if (!token.startsWith('{{secret:')) return undefined
      // A secret asked for with no vault to hold it is refused, never passed on as its token's text.
      if (opening === undefined)
        throw new VaultError(
          'VAULT_NO_PASSPHRASE',
          `${token} needs the secrets vault: set LANGO_PASSPHRASE for the server, then store the secret`,
        )
      return (await opening).resolve(token)
    },
    // The configuration's own secrets are masked too, vault or not: a command that reads one
    // (lango.yaml, a _FILE, another process's environment) never shows it.
    *heldValues() {
      yield* configured
      if (opened !== undefined) yield* opened.heldValues()
    },
  }
}
