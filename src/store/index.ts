// The store: where a batch's rows, results and submit journal live (PostgreSQL or the embedded
// SQLite file), opened from the same settings as the rest of the project.
import {
  encryptionSettingsFromEnv,
  keyringFromSettings,
  type EncryptionSettings,
} from '../codec/settings.js';
import {
  idSecretFromEnv,
  idSecretFromSettings,
  IdSecretConfigError,
  type IdSecret,
  type IdSecretSettings,
} from '../codec/idempotency.js';
import { BatchStore } from './batch-store.js';
import { openStore, type Store } from './open.js';
import { ResultCache } from './result-cache.js';
import type { ResultCacheRoles, StoreRoles } from './roles.js';
import { createSealer, type Sealer } from './sealer.js';

export { BatchStore, BatchStoreError } from './batch-store.js';
export { MAX_DELIVERIES_PER_ROW } from './delivery-inbox.js';
export type {
  CachedResult,
  CacheHits,
  CacheStats,
  CacheUpkeep,
  CallCache,
  PurgeRequest,
  ResultCacheRoles,
  BatchRecord,
  BatchRecords,
  BatchResults,
  BatchRows,
  DeliveryInbox,
  DeliveryRecording,
  IdentifiedStore,
  LoadedRow,
  PlanCounts,
  ResultLinesPage,
  ResultLinesQuery,
  ResultReader,
  ResultsWritten,
  RowsRead,
  StoredDelivery,
  StoreRoles,
  SubmitJournal,
  SubmitJournalReader,
  WorkerRegistry,
} from './roles.js';
export {
  batchResultPages,
  batchResults,
  exportBatchFromStore,
  type BatchResultsQuery,
  type ResultCursor,
  type ResultPage,
  type StoredResult,
  type StoreExportFormat,
  type StoreExportRequest,
} from './export.js';
export {
  migrateStore,
  openStore,
  parseStoreUrl,
  readStoreId,
  showStoreUrl,
  StoreConfigError,
  type Store,
  type StoreEngine,
  type StoreLocation,
} from './open.js';
export {
  LOAD_CHUNK_ROWS,
  loadFailure,
  loadFileIntoStore,
  LoadError,
  loadRowsIntoStore,
  MAX_INPUT_COLUMNS,
  type FileLoadOptions,
  type LoadProgress,
  type LoadResult,
  type RowsLoadOptions,
} from './load.js';
export { createSealer, StoreSealError, type Sealer } from './sealer.js';
export { storeMismatch, type StoreIdentity } from './identity.js';
export { ResultCache } from './result-cache.js';
export {
  CACHE_TTL,
  cacheUseOf,
  parseAge,
  type CacheTtl,
  type CacheUse,
} from '../calls/cache-policy.js';
export { CACHE_SWEEP_INTERVAL_MS, startCacheSweep, type CacheSweep } from './cache-sweep.js';

/** Why a store is not opened without the id secret, and how to give it. */
export const STORE_ID_SECRET_MESSAGE =
  'the store keys its lookups and erasure subjects with the id secret, and never with a plain ' +
  'hash: set PCDS_ID_SECRET (32+ characters, e.g. `openssl rand -base64 32`) or ' +
  'PCDS_ID_SECRET_FILE, the same in every worker, CLI and client of the store ' +
  '(`pcds dev` makes <PCDS_DATA_DIR>/id-secret and prints the line)';

function requiredIdSecret(secret: IdSecret | undefined): IdSecret {
  if (!secret) throw new IdSecretConfigError(STORE_ID_SECRET_MESSAGE);
  return secret;
}

/**
 * Opens the store from PCDS_STORE_URL and PCDS_DATA_DIR, sealing values with the payload
 * codec's keys (PCDS_ENCRYPTION*) and keying lookups with PCDS_ID_SECRET (refused without it).
 */
export async function openStoreFromEnv(env: NodeJS.ProcessEnv = process.env): Promise<Store> {
  const keyring = keyringFromSettings(encryptionSettingsFromEnv(env));
  return openStore({
    url: env.PCDS_STORE_URL,
    dataDir: env.PCDS_DATA_DIR ?? '.data',
    sealer: createSealer(keyring, requiredIdSecret(idSecretFromEnv(env))),
  });
}

/** The store settings a Config carries (the worker's, the CLI's). */
export type StoreSettings = EncryptionSettings &
  IdSecretSettings & { PCDS_STORE_URL?: string | undefined; PCDS_DATA_DIR: string };

/**
 * The sealer the settings make: refused (a ConfigError naming the setting) without a payload key
 * while encryption is on, and without the id secret. A process that opens its store later (a
 * worker, on first use) calls it at start, so a missing secret stops it before it polls.
 */
export function storeSealerFromSettings(s: StoreSettings): Sealer {
  return createSealer(keyringFromSettings(s), requiredIdSecret(idSecretFromSettings(s)));
}

export async function openStoreFromSettings(s: StoreSettings): Promise<Store> {
  const sealer = storeSealerFromSettings(s);
  return openStore({ url: s.PCDS_STORE_URL, dataDir: s.PCDS_DATA_DIR, sealer });
}

/**
 * A batch store opened on first use and kept (a running worker's first use is its cache sweep):
 * one whose database is down starts anyway (its activities and sweeps retry until it is back).
 */
export interface LazyBatchStore {
  get(): Promise<StoreRoles>;
  /** The result cache in the same store (single calls look up and fill it). */
  cache(): Promise<ResultCacheRoles>;
  close(): Promise<void>;
}

export function lazyBatchStore(open: () => Promise<Store>): LazyBatchStore {
  let opening: Promise<Store> | undefined;
  const store = () =>
    (opening ??= open().catch((err: unknown) => {
      opening = undefined;
      throw err;
    }));
  return {
    async get() {
      return new BatchStore(await store());
    },
    async cache() {
      return new ResultCache(await store());
    },
    async close() {
      const s = await opening?.catch(() => undefined);
      opening = undefined;
      await s?.close();
    },
  };
}
