import type { ApiClient } from '../client.js'
import type { CommandContext } from '../context.js'
import { ApiError, CliError } from '../errors.js'
import { type CheckResult, safeMessage } from './check.js'
import { NETWORK_TIMEOUT_MS } from './http.js'

/** The server answers at its address, is ready, and every instance on its database is alive. */
export async function checkServer(context: CommandContext): Promise<CheckResult> {
  let client: ApiClient
  try {
    client = await context.client()
  } catch (error) {
    return {
      name: 'server',
      status: 'warn',
      message: `not checked: ${CliError.is(error) ? error.message : 'no server address (the configuration does not load)'}`,
    }
  }
  try {
    const health = await client.get<{ status?: string; version?: string; scheduler?: string }>('/healthz', {
      timeoutMs: NETWORK_TIMEOUT_MS,
    })
    // The cluster: every server registered on the same database (issue 14).
    const cluster = await client
      .get<{
        instances: {
          id: string
          host: string
          pid: number
          alive: boolean
          heartbeat_at: string
          lease_ms?: number | null
        }[]
        leases?: { name: string; owner: string; expires_at: string }[]
        /** Servers this one took for dead in the last day (absent from servers before this field). */
        lost?: { host: string; pid: number; found_at: string }[]
      }>('/api/instances', { timeoutMs: NETWORK_TIMEOUT_MS })
      .catch((error: unknown) => {
        // A refused token is the operator's to fix (every other check that asks the server fails too).
        if (ApiError.is(error) && error.status === 401) throw error
        return undefined
      })
    const instances = cluster?.instances ?? []
    const silent = instances.filter((instance) => !instance.alive)
    const lost = cluster?.lost ?? []
    const mixed = mixedLeases(instances)
    const clusterLine =
      cluster === undefined
        ? ''
        : `; ${instances.length} instance${instances.length === 1 ? '' : 's'} on its database${
            silent.length === 0
              ? ''
              : `, ${silent.length} not answering (${silent.map((instance) => `${instance.host}:${instance.pid}`).join(', ')})`
          }${
            lost.length === 0
              ? ''
              : `, ${lost.length} taken for dead in the last day (${lost.map((instance) => `${instance.host}:${instance.pid} at ${instance.found_at}`).join(', ')})`
          }${mixed === undefined ? '' : `, with different cluster.lease values (${mixed})`}${leaseLine(cluster.leases ?? [])}`
    const fixes = [
      ...(silent.length === 0
        ? []
        : [
            'an instance stopped without deregistering (killed?): a running server removes it at its next heartbeat, else the next server to start',
          ]),
      ...(lost.length === 0
        ? []
        : [
            "a server stopped without deregistering (killed, crashed, its host down, or cut off from the database): find why in its host's log; its cron runs were marked interrupted and its workflow runs resumed here or on another server",
          ]),
      ...(mixed === undefined
        ? []
        : [
            'set the same cluster.lease on every server sharing the database (a server takes another for dead after its own lease without a heartbeat)',
          ]),
    ]
    return {
      name: 'server',
      status: fixes.length === 0 ? 'ok' : 'warn',
      message: `running at ${client.baseUrl} (version ${health.version ?? '?'}, scheduler ${health.scheduler ?? '?'})${clusterLine}`,
      ...(fixes.length === 0 ? {} : { fix: fixes.join('; ') }),
      details: { url: client.baseUrl, health, instances, leases: cluster?.leases ?? [] },
    }
  } catch (error) {
    if (CliError.is(error) && error.code === 'CLI_SERVER_NOT_RUNNING')
      return {
        name: 'server',
        status: 'warn',
        message: `not running at ${client.baseUrl}`,
        fix: 'start it with `lango serve`',
      }
    if (ApiError.is(error) && error.status === 401)
      return {
        name: 'server',
        status: 'fail',
        message: `answers at ${client.baseUrl} but refuses the API token: ${error.message}`,
        fix: "set LANGO_API_TOKEN (or server.api_token in this home's lango.yaml) to the token the server was started with",
      }
    if (ApiError.is(error) && error.status === 503 && error.code === 'SERVER_DATABASE_UNAVAILABLE')
      return {
        name: 'server',
        status: 'fail',
        message: `answers at ${client.baseUrl} but ${error.message}`,
        fix: "free space on the database's disk (or make its file writable, or bring PostgreSQL back); the server's log names the error, and the server resumes by itself once writes work",
      }
    if (ApiError.is(error) && error.status === 503)
      return {
        name: 'server',
        status: 'warn',
        message: `answers at ${client.baseUrl} but is not ready (${error.message})`,
        fix: 'wait for start-up to finish; if it stays so, read its log (stderr)',
      }
    return {
      name: 'server',
      status: 'fail',
      message: `${client.baseUrl}: ${CliError.is(error) || ApiError.is(error) ? error.message : safeMessage(error)}`,
      fix: 'check --url / LANGO_URL, and that LANGO_API_TOKEN matches the server',
    }
  }
}

/** `; leases: retention on host:pid, …`: who runs each singleton duty (owner ids start with host:pid). */
function leaseLine(leases: readonly { readonly name: string; readonly owner: string }[]): string {
  if (leases.length === 0) return ''
  const holder = (owner: string) => owner.split(':').slice(0, 2).join(':')
  return `; leases: ${leases.map((lease) => `${lease.name} on ${holder(lease.owner)}`).join(', ')}`
}

/** The live instances' leases when they are not all the same (`host:pid 30s, …`), else undefined. */
function mixedLeases(
  instances: readonly { host: string; pid: number; alive: boolean; lease_ms?: number | null }[],
): string | undefined {
  const live = instances.filter((instance) => instance.alive && typeof instance.lease_ms === 'number')
  if (new Set(live.map((instance) => instance.lease_ms)).size < 2) return undefined
  return live
    .map((instance) => `${instance.host}:${instance.pid} ${(instance.lease_ms as number) / 1000}s`)
    .join(', ')
}
