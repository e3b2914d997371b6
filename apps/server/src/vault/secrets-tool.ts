import { type AnyTool, defineTool } from '@lango/tools'
import * as v from 'valibot'

/** What `secrets_list` needs: `Vault` fits as is. */
interface SecretsToolsVault {
  list(): Promise<readonly { readonly name: string; readonly token: string }[]>
}

/** Options of {@link createSecretsTools}. */
export interface SecretsToolsOptions {
  /**
   * The vault, or a function returning it when it opens lazily (scrypt takes 1–2 s); what that
   * function throws (`VAULT_NO_PASSPHRASE`) becomes the call's error.
   */
  readonly vault: SecretsToolsVault | (() => Promise<SecretsToolsVault>)
}

/**
 * The agent's view of the vault: `secrets_list`, names and tokens only. Values are never returned
 * to the model; they are set by a human with `lango secrets set NAME`.
 */
export function createSecretsTools(options: SecretsToolsOptions): AnyTool[] {
  const vault = async (): Promise<SecretsToolsVault> =>
    typeof options.vault === 'function' ? options.vault() : options.vault
  const secretsList = defineTool({
    name: 'secrets_list',
    title: 'List secrets',
    description:
      'The secrets stored in the vault: each name with its {{secret:NAME}} token. Put the token in an exec command, env override, cron shell job or workflow shell step; it is resolved when the command runs and the value is masked in output. Values are never shown; a human adds secrets with `lango secrets set NAME`.',
    safety: 'safe',
    idempotent: true,
    parameters: v.strictObject({}),
    output: v.strictObject({
      secrets: v.array(v.strictObject({ name: v.string(), token: v.string() })),
      count: v.number(),
    }),
    async handler() {
      const secrets = (await (await vault()).list()).map(({ name, token }) => ({ name, token }))
      return { secrets, count: secrets.length }
    },
  })
  return [secretsList]
}
