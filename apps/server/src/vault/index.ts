export { VaultError } from './errors.js'
export { migrateVault, Vault } from './vault.js'
