/**
 * Terminology
 * - receipt: one accepted webhook call, by hook name and its `webhook-id` (Standard Webhooks): a row
 *   of `webhook_receipts`, shared by every server on the database, so a call replayed to this or
 *   another server (or after a restart) is refused.
 * - window: a call is accepted only while its signed timestamp is within {@link TIMESTAMP_TOLERANCE_MS}
 *   of the clock, so a receipt can be forgotten once its call could no longer verify: twice that after
 *   it was received.
 */
import type { ColumnType, Kysely, Migration } from 'kysely'
import type { DatabaseFeature } from '../db/database.js'
import { runMigrations } from '../db/migrations.js'

/** How far a call's `webhook-timestamp` may be from the clock, either way: 5 minutes. */
export const TIMESTAMP_TOLERANCE_MS = 5 * 60_000

/** How long a receipt is kept: past it, the call it records no longer verifies (see the terminology). */
const RECEIPT_TTL_MS = 2 * TIMESTAMP_TOLERANCE_MS

/** Longest `webhook-id` accepted (Standard Webhooks ids are short, e.g. `msg_2KWPBgLlAfxdpx2AI54pPJ85f4W`). */
export const MAX_MESSAGE_ID_CHARS = 256

/** `webhook_receipts`: one row per accepted call; `received_at` in epoch ms (`bigint`). */
interface WebhookReceiptsTable {
  hook: string
  message_id: string
  received_at: ColumnType<number | string, number, number>
}

/** The tables the webhook receipts own. */
export interface WebhookDatabase {
  webhook_receipts: WebhookReceiptsTable
}

/** The migration table of the webhook receipts (kysely: "ALWAYS use the same value"). */
const WEBHOOK_MIGRATION_TABLE = 'webhook_migrations'

const webhookMigrations: Readonly<Record<string, Migration>> = Object.freeze({
  '0001_create_webhook_receipts': {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .createTable('webhook_receipts')
        .addColumn('hook', 'text', (column) => column.notNull())
        .addColumn('message_id', 'text', (column) => column.notNull())
        .addColumn('received_at', 'bigint', (column) => column.notNull())
        .addPrimaryKeyConstraint('webhook_receipts_pk', ['hook', 'message_id'])
        .execute()
      await db.schema
        .createIndex('webhook_receipts_received_idx')
        .on('webhook_receipts')
        .column('received_at')
        .execute()
    },
    async down(db: Kysely<unknown>): Promise<void> {
      await db.schema.dropTable('webhook_receipts').execute()
    },
  },
})

/** Creates or upgrades `webhook_receipts` (migration table `webhook_migrations`); throws if a migration failed. */
async function migrateWebhooks<DB>(db: Kysely<DB>): Promise<void> {
  await runMigrations(db, 'webhooks', WEBHOOK_MIGRATION_TABLE, webhookMigrations)
}

/** The webhook receipts' share of the server's database. */
export const webhookTables: DatabaseFeature<WebhookDatabase> = {
  name: 'webhooks',
  migrationTable: WEBHOOK_MIGRATION_TABLE,
  migrations: webhookMigrations,
  migrate: migrateWebhooks,
}

/** The replay ledger of webhook calls: {@link WebhookReceipts.recordOnce}. */
export class WebhookReceipts<DB = WebhookDatabase> {
  readonly #db: Kysely<WebhookDatabase>

  /** Takes the host's handle as it is (any tables besides `webhook_receipts`). */
  constructor(db: Kysely<DB>) {
    // Kysely's DB parameter is invariant: narrow the host's handle once; only `webhook_receipts` is queried.
    this.#db = db as unknown as Kysely<WebhookDatabase>
  }

  /**
   * Records the call `messageId` to `hook` received at `now` (epoch ms); false when it was recorded
   * before (a replay), on this server or another on the database. Forgets receipts past their window
   * first, so the table holds at most the last 10 minutes of calls.
   */
  async recordOnce(hook: string, messageId: string, now: number): Promise<boolean> {
    await this.#db
      .deleteFrom('webhook_receipts')
      .where('received_at', '<', now - RECEIPT_TTL_MS)
      .execute()
    const result = await this.#db
      .insertInto('webhook_receipts')
      .values({ hook, message_id: messageId, received_at: now })
      .onConflict((conflict) => conflict.columns(['hook', 'message_id']).doNothing())
      .executeTakeFirst()
    return Number(result.numInsertedOrUpdatedRows ?? 0n) === 1
  }

  /**
   * Forgets the receipt of the call `messageId` to `hook` recorded at `receivedAt` (what
   * {@link recordOnce} was given): the call started nothing, so the sender's retry of it must not be
   * refused as a replay. A receipt recorded at another time (by another server) is kept.
   */
  async forget(hook: string, messageId: string, receivedAt: number): Promise<void> {
    await this.#db
      .deleteFrom('webhook_receipts')
      .where('hook', '=', hook)
      .where('message_id', '=', messageId)
      .where('received_at', '=', receivedAt)
      .execute()
  }
}
