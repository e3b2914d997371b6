export { VaultError, type VaultErrorCode } from './errors.js'
export { type ReadSecretOptions, readSecretValue } from './read-secret.js'
export { createSecretsTools, type SecretsToolsOptions, type SecretsToolsVault } from './secrets-tool.js'
export {
  DEFAULT_KDF,
  type KdfParams,
  MAX_SECRET_BYTES,
  migrateVault,
  SECRET_NAME_PATTERN,
  type SecretEntry,
  secretToken,
  VAULT_MIGRATION_TABLE,
  Vault,
  type VaultDatabase,
  type VaultOptions,
  vaultMigrations,
} from './vault.js'
