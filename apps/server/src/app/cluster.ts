import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import { ClusterClock } from '../cluster/clock.js'
import { InstanceRegistry } from '../cluster/instances.js'
import { LeaseTable, SingletonDuties } from '../cluster/leases.js'
import type { ServerConfig } from '../config/types.js'
import type { Logger } from '../logger.js'
import { VERSION } from '../version.js'
import type { ServerDatabase } from './database-features.js'

/** This server among the others on its database. */
export interface ClusterMembership {
  /** One owner id for this process's scheduler and engine (their leases and claims). */
  readonly ownerId: string
  /** The cluster's one clock: the database's time on PostgreSQL. */
  readonly clock: ClusterClock
  /** The servers sharing this database, this one included. */
  readonly instances: InstanceRegistry
  /** Singleton duties and the leases this server holds. */
  readonly duties: SingletonDuties
}

/**
 * This server's place in the cluster (ARCHITECTURE.md §10): its owner id, the one clock leases and
 * heartbeats are compared on, its instance row and its singleton duties. Nothing starts here.
 */
export function joinCluster(
  config: ServerConfig,
  database: ServerDatabase,
  logger: Logger,
  options: { readonly localNow?: () => number },
): ClusterMembership {
  const ownerId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
  const leaseMs = config.cluster.leaseMs
  const clock = new ClusterClock(
    config.database.kind === 'postgres' ? database.db : undefined,
    logger,
    Math.max(100, leaseMs / 10),
    options.localNow === undefined ? {} : { localNow: options.localNow },
  )
  const now = (): number => clock.nowMs()
  const instances = new InstanceRegistry(database.db, {
    id: ownerId,
    host: hostname(),
    pid: process.pid,
    version: VERSION,
    logger,
    heartbeatMs: leaseMs / 3,
    now,
  })
  const duties = new SingletonDuties({
    leases: new LeaseTable(database.db, now, {
      dialect: config.database.kind,
      statementTimeoutMs: Math.floor(leaseMs / 3),
    }),
    owner: ownerId,
    ttlMs: leaseMs,
    now,
    logger,
  })
  return { ownerId, clock, instances, duties }
}
