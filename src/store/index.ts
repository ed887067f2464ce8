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
  type IdSecretSettings,
} from '../temporal/idempotency.js';
import { BatchStore } from './batch-store.js';
import { openStore, type Store } from './open.js';
import { ResultCache } from './result-cache.js';
import { createSealer } from './sealer.js';

export {
  BatchStore,
  BatchStoreError,
  MAX_DELIVERIES_PER_ROW,
  type BatchRecord,
  type DeliveryRecording,
  type LoadedRow,
  type StoredDelivery,
} from './batch-store.js';
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
export {
  ResultCache,
  type CachedResult,
  type CacheStats,
  type PurgeRequest,
} from './result-cache.js';
export {
  CACHE_TTL,
  cacheUseOf,
  parseAge,
  type CacheTtl,
  type CacheUse,
} from '../calls/cache-policy.js';
export { CACHE_SWEEP_INTERVAL_MS, startCacheSweep, type CacheSweep } from './cache-sweep.js';

/**
 * Opens the store from PCDS_STORE_URL and PCDS_DATA_DIR, sealing values with the payload
 * codec's keys (PCDS_ENCRYPTION*) and keying lookups with PCDS_ID_SECRET.
 */
export function openStoreFromEnv(env: NodeJS.ProcessEnv = process.env): Promise<Store> {
  const keyring = keyringFromSettings(encryptionSettingsFromEnv(env));
  return openStore({
    url: env.PCDS_STORE_URL,
    dataDir: env.PCDS_DATA_DIR ?? '.data',
    sealer: createSealer(keyring, idSecretFromEnv(env)),
  });
}

/** The store settings a Config carries (the worker's, the CLI's). */
export type StoreSettings = EncryptionSettings &
  IdSecretSettings & { PCDS_STORE_URL?: string | undefined; PCDS_DATA_DIR: string };

export function openStoreFromSettings(s: StoreSettings): Promise<Store> {
  return openStore({
    url: s.PCDS_STORE_URL,
    dataDir: s.PCDS_DATA_DIR,
    sealer: createSealer(keyringFromSettings(s), idSecretFromSettings(s)),
  });
}

/**
 * A batch store opened on first use and kept (a running worker's first use is its cache sweep):
 * one whose database is down starts anyway (its activities and sweeps retry until it is back).
 */
export interface LazyBatchStore {
  get(): Promise<BatchStore>;
  /** The result cache in the same store (single calls look up and fill it). */
  cache(): Promise<ResultCache>;
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
