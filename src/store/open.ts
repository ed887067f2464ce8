// Opens the store named by PCDS_STORE_URL: PostgreSQL (postgres://...) for production, or the
// embedded SQLite file (sqlite:PATH, default <PCDS_DATA_DIR>/store.sqlite) for `pcds dev`, the
// demo and the tests. One Kysely query layer over both, migrations run on open.
import { PcdsError } from '../contract/pcds-error.js';
import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import {
  CompiledQuery,
  Kysely,
  Migrator,
  PostgresDialect,
  SqliteDialect,
  SqliteDriver,
  type DatabaseConnection,
  type Driver,
  type SqliteDialectConfig,
} from 'kysely';
import pg from 'pg';
import { migrationProvider } from './migrations.js';
import type { StoreSchema } from './schema.js';
import type { Sealer } from './sealer.js';

export type StoreEngine = 'postgres' | 'sqlite';

export class StoreConfigError extends PcdsError {
  override name = 'StoreConfigError';
  override readonly code = 'invalid_store_url';
  constructor(message: string) {
    super('invalid_store_url', message);
  }
}

/** Where a store lives, without its password: safe to print. */
export interface StoreLocation {
  engine: StoreEngine;
  /** The SQLite file, or the PostgreSQL URL with any password replaced by ***. */
  shown: string;
}

export interface Store {
  readonly db: Kysely<StoreSchema>;
  readonly engine: StoreEngine;
  /**
   * The store's identity (random, made by its migrations): a batch records it at start and its
   * workers check it. Undefined only for a store opened without its migrations.
   */
  readonly id: string | undefined;
  readonly sealer: Sealer;
  readonly location: StoreLocation;
  close(): Promise<void>;
}

const PG_BIGINT = 20;

/** The setting's engine and target; a URL of another scheme is refused with the setting named. */
export function parseStoreUrl(
  url: string | undefined,
  dataDir: string,
): { engine: 'postgres'; url: string } | { engine: 'sqlite'; path: string } {
  if (!url || url.trim() === '')
    return { engine: 'sqlite', path: resolve(dataDir, 'store.sqlite') };
  if (/^postgres(ql)?:\/\//i.test(url)) return { engine: 'postgres', url };
  if (/^sqlite:/i.test(url)) {
    const path = url.replace(/^sqlite:(\/\/)?/i, '');
    if (!path) throw new StoreConfigError('PCDS_STORE_URL: sqlite: needs a file path');
    return { engine: 'sqlite', path: resolve(path) };
  }
  throw new StoreConfigError(
    'PCDS_STORE_URL: use postgres://user@host:port/database or sqlite:/path/to/store.sqlite',
  );
}

export function showStoreUrl(url: string | undefined, dataDir: string): StoreLocation {
  const target = parseStoreUrl(url, dataDir);
  if (target.engine === 'sqlite') return { engine: 'sqlite', shown: `sqlite:${target.path}` };
  try {
    const u = new URL(target.url);
    if (u.password) u.password = '***';
    return { engine: 'postgres', shown: u.toString() };
  } catch {
    return { engine: 'postgres', shown: 'postgres://(unparsable URL)' };
  }
}

/**
 * Kysely's SQLite driver, but a transaction takes the file's write lock as it begins (`BEGIN
 * IMMEDIATE`). A deferred transaction that reads and then writes fails at once with "database is
 * locked" when another process wrote in between (SQLite cannot let it wait: its snapshot is
 * stale); an immediate one waits its turn (busy_timeout) like a single statement does.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

class StoreSqliteDialect extends SqliteDialect {
  constructor(private readonly settings: SqliteDialectConfig) {
    super(settings);
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.settings);
  }
}

function sqliteDialect(path: string): SqliteDialect {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  return new StoreSqliteDialect({
    database: async () => {
      // Its owner's only, like every file of results: SQLite gives its WAL files the same mode.
      closeSync(openSync(path, 'a', 0o600));
      chmodSync(path, 0o600);
      const db = new SqliteDatabase(path);
      // WAL: workers, the CLI and `pcds dev` on one machine share the file; a writer waits its
      // turn (busy_timeout) instead of failing.
      db.pragma('journal_mode = WAL');
      db.pragma('busy_timeout = 30000');
      db.pragma('synchronous = NORMAL');
      // What is deleted (an erased person's rows, swept cache entries) is overwritten with zeros
      // in the file, not left in free pages: with a checkpoint that empties the WAL (erasure.ts),
      // a deleted value is gone from disk.
      db.pragma('secure_delete = ON');
      return db;
    },
  });
}

function postgresDialect(url: string): PostgresDialect {
  const pool = new pg.Pool({
    connectionString: url,
    max: 8,
    // Counts and epoch milliseconds come back as numbers, not strings.
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        oid === PG_BIGINT
          ? (v: string) => Number(v)
          : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  });
  // An idle connection the database (or the network) drops is reported here; unheard, the
  // event would end the process. The pool replaces it, and the next query that cannot connect
  // fails (the activity retries until the database is back).
  pool.on('error', () => undefined);
  // A connection held between two queries (a transaction, the migration lock) that drops
  // reports to its own client, which the pool does not listen to while it is lent out. The
  // statement that next uses it fails instead, and the pool discards it when it comes back.
  pool.on('connect', (client) => client.on('error', () => undefined));
  return new PostgresDialect({ pool });
}

/** The store's identity, once its migrations ran (undefined before). */
export async function readStoreId(db: Kysely<StoreSchema>): Promise<string | undefined> {
  try {
    const row = await db
      .selectFrom('pcds_store_meta')
      .select('value')
      .where('name', '=', 'store_id')
      .executeTakeFirst();
    return row?.value;
  } catch {
    return undefined;
  }
}

/** Runs the migrations not yet run; several processes opening at once take turns (a lock). */
export async function migrateStore(db: Kysely<StoreSchema>): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: migrationProvider,
    migrationTableName: 'pcds_store_migration',
    migrationLockTableName: 'pcds_store_migration_lock',
  });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error('the store migration failed');
}

export async function openStore(options: {
  url?: string;
  dataDir: string;
  sealer: Sealer;
  /** false: the caller runs migrations itself (tests of a migration). */
  migrate?: boolean;
}): Promise<Store> {
  const target = parseStoreUrl(options.url, options.dataDir);
  const db = new Kysely<StoreSchema>({
    dialect: target.engine === 'sqlite' ? sqliteDialect(target.path) : postgresDialect(target.url),
  });
  let id: string | undefined;
  try {
    if (options.migrate !== false) await migrateStore(db);
    id = await readStoreId(db);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  return {
    db,
    engine: target.engine,
    id,
    sealer: options.sealer,
    location: showStoreUrl(options.url, options.dataDir),
    close: () => db.destroy(),
  };
}
