// The store's versioned migrations, in order. Each is written once the same for both engines
// (Kysely's schema builder with portable types: text, integer, bigint), never edited after it
// shipped: a change of shape is a new migration.
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Migration, MigrationProvider } from 'kysely';

const m0001_batches: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('pcds_batches')
      .addColumn('batch_id', 'text', (c) => c.primaryKey())
      .addColumn('endpoint', 'text', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('total', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('blank_lines', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('invalid', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('columns', 'text')
      .addColumn('summary', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('loaded_at', 'text')
      .execute();
    await db.schema
      .createTable('pcds_rows')
      .addColumn('batch_id', 'text', (c) => c.notNull())
      .addColumn('row', 'integer', (c) => c.notNull())
      .addColumn('data', 'text', (c) => c.notNull())
      .addColumn('problem', 'text')
      .addColumn('code', 'text')
      .addColumn('lookup', 'text')
      .addColumn('duplicate_of', 'integer')
      .addPrimaryKeyConstraint('pcds_rows_pk', ['batch_id', 'row'])
      .execute();
    // Duplicates are found by the database: the first row of each lookup leads.
    await db.schema
      .createIndex('pcds_rows_lookup')
      .on('pcds_rows')
      .columns(['batch_id', 'lookup', 'row'])
      .execute();
    await db.schema
      .createTable('pcds_results')
      .addColumn('batch_id', 'text', (c) => c.notNull())
      .addColumn('row', 'integer', (c) => c.notNull())
      .addColumn('outcome', 'text', (c) => c.notNull())
      .addColumn('code', 'text')
      .addColumn('message', 'text')
      .addColumn('request_id', 'text')
      .addColumn('key_id', 'text')
      .addColumn('duplicate_of', 'integer')
      .addColumn('result', 'text')
      .addColumn('written_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('pcds_results_pk', ['batch_id', 'row'])
      .execute();
    await db.schema
      .createIndex('pcds_results_outcome')
      .on('pcds_results')
      .columns(['batch_id', 'outcome', 'row'])
      .execute();
    await db.schema
      .createIndex('pcds_results_written')
      .on('pcds_results')
      .columns(['batch_id', 'written_at', 'row'])
      .execute();
    await db.schema
      .createTable('pcds_journal')
      .addColumn('batch_id', 'text', (c) => c.notNull())
      .addColumn('row', 'integer', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('owner', 'text', (c) => c.notNull())
      .addColumn('key_id', 'text')
      .addColumn('request_id', 'text')
      .addColumn('status', 'text')
      .addColumn('accepted_at', 'bigint')
      .addPrimaryKeyConstraint('pcds_journal_pk', ['batch_id', 'row'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    for (const t of ['pcds_journal', 'pcds_results', 'pcds_rows', 'pcds_batches'])
      await db.schema.dropTable(t).ifExists().execute();
  },
};

const m0002_result_cache: Migration = {
  async up(db: Kysely<unknown>) {
    // A batch's cache policy (JSON {mode, maxAgeMs}); null: the batch neither reads nor fills it.
    await db.schema.alterTable('pcds_batches').addColumn('cache', 'text').execute();
    // Keyed HMACs of the emails and URLs a row names (space-separated): an erasure finds them.
    await db.schema.alterTable('pcds_rows').addColumn('subjects', 'text').execute();
    // Epoch ms when a result taken from the cache was fetched; null: fetched for this row.
    await db.schema.alterTable('pcds_results').addColumn('cached_at', 'bigint').execute();
    await db.schema
      .createTable('pcds_cache')
      .addColumn('lookup', 'text', (c) => c.primaryKey())
      .addColumn('endpoint', 'text', (c) => c.notNull())
      .addColumn('outcome', 'text', (c) => c.notNull())
      .addColumn('request_id', 'text', (c) => c.notNull())
      .addColumn('status', 'text')
      .addColumn('result', 'text')
      .addColumn('subjects', 'text')
      .addColumn('fetched_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .addColumn('hits', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema
      .createIndex('pcds_cache_expiry')
      .on('pcds_cache')
      .columns(['expires_at'])
      .execute();
    // A single call's job whose result fills the cache when a poll reads it.
    await db.schema
      .createTable('pcds_cache_pending')
      .addColumn('request_id', 'text', (c) => c.primaryKey())
      .addColumn('lookup', 'text', (c) => c.notNull())
      .addColumn('endpoint', 'text', (c) => c.notNull())
      .addColumn('subjects', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('pcds_cache_pending').ifExists().execute();
    await db.schema.dropTable('pcds_cache').ifExists().execute();
    await db.schema.alterTable('pcds_results').dropColumn('cached_at').execute();
    await db.schema.alterTable('pcds_rows').dropColumn('subjects').execute();
    await db.schema.alterTable('pcds_batches').dropColumn('cache').execute();
  },
};

const m0003_webhook_deliveries: Migration = {
  async up(db: Kysely<unknown>) {
    // A compact row's webhook deliveries, until its row ends: the row has no workflow to signal,
    // so the receiver keeps them here for the row's activity (on whichever worker) to read. The
    // envelope is sealed; request_id is '' for a failure envelope, which names no job.
    await db.schema
      .createTable('pcds_deliveries')
      .addColumn('batch_id', 'text', (c) => c.notNull())
      .addColumn('row', 'integer', (c) => c.notNull())
      .addColumn('request_id', 'text', (c) => c.notNull())
      .addColumn('body', 'text', (c) => c.notNull())
      .addColumn('received_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('pcds_deliveries_pk', ['batch_id', 'row', 'request_id'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('pcds_deliveries').ifExists().execute();
  },
};

const m0004_store_identity: Migration = {
  async up(db: Kysely<unknown>) {
    // The store's identity, made once when the store is created (or first opened by a release
    // that knows it): a batch records the id of the store its rows went to, and a worker on
    // another store refuses it instead of finding no rows. Random, so two stores never share one.
    await db.schema
      .createTable('pcds_store_meta')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .execute();
    await (db as Kysely<{ pcds_store_meta: { name: string; value: string } }>)
      .insertInto('pcds_store_meta')
      .values([
        { name: 'store_id', value: randomUUID() },
        { name: 'created_at', value: new Date().toISOString() },
      ])
      .execute();
    // What each worker last said of itself, every minute or so (store/worker-reports.ts): the
    // workers of a store are found in it, and `pcds doctor` compares their settings with its own
    // by ids and fingerprints, never by a value.
    await db.schema
      .createTable('pcds_workers')
      .addColumn('identity', 'text', (c) => c.primaryKey())
      .addColumn('task_queue', 'text', (c) => c.notNull())
      .addColumn('namespace', 'text', (c) => c.notNull())
      .addColumn('report', 'text', (c) => c.notNull())
      .addColumn('started_at', 'bigint', (c) => c.notNull())
      .addColumn('seen_at', 'bigint', (c) => c.notNull())
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropTable('pcds_workers').ifExists().execute();
    await db.schema.dropTable('pcds_store_meta').ifExists().execute();
  },
};

const m0005_erasure_subjects: Migration = {
  async up(db: Kysely<unknown>) {
    // Keyed HMACs of the identifiers a result (and a delivered envelope) names: the emails,
    // profile URLs, phone numbers and name-at-company of the people in it, so an erasure finds
    // a result fetched by one identifier that names the person by another. Null on results
    // written before: an erasure counts those as what it could not check.
    await db.schema.alterTable('pcds_results').addColumn('subjects', 'text').execute();
    await db.schema.alterTable('pcds_deliveries').addColumn('subjects', 'text').execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.alterTable('pcds_deliveries').dropColumn('subjects').execute();
    await db.schema.alterTable('pcds_results').dropColumn('subjects').execute();
  },
};

const m0006_cache_scope: Migration = {
  async up(db: Kysely<unknown>) {
    // The tenant whose request fetched an entry (null: fetched before tenants, the operator's).
    // With the cache shared across tenants, another tenant's hit never shows its request id or time.
    await db.schema.alterTable('pcds_cache').addColumn('scope', 'text').execute();
    await db.schema.alterTable('pcds_cache_pending').addColumn('scope', 'text').execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.alterTable('pcds_cache_pending').dropColumn('scope').execute();
    await db.schema.alterTable('pcds_cache').dropColumn('scope').execute();
  },
};

const m0007_duplicates_index: Migration = {
  async up(db: Kysely<unknown>) {
    // Each read of a batch's rows counts its leaders' duplicates: without it, a scan of all
    // the batch's rows per chunk read, slower as the batch grows.
    await db.schema
      .createIndex('pcds_rows_duplicate_of')
      .on('pcds_rows')
      .columns(['batch_id', 'duplicate_of'])
      .execute();
  },
  async down(db: Kysely<unknown>) {
    await db.schema.dropIndex('pcds_rows_duplicate_of').ifExists().execute();
  },
};

/** Every migration by name; names sort in the order they run. */
export const migrations: Record<string, Migration> = {
  '0001_batches': m0001_batches,
  '0002_result_cache': m0002_result_cache,
  '0003_webhook_deliveries': m0003_webhook_deliveries,
  '0004_store_identity': m0004_store_identity,
  '0005_erasure_subjects': m0005_erasure_subjects,
  '0006_cache_scope': m0006_cache_scope,
  '0007_duplicates_index': m0007_duplicates_index,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: () => Promise.resolve(migrations),
};
