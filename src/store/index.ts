// The store: where a batch's rows, results and submit journal live (PostgreSQL or the embedded
// SQLite file), opened from the same settings as the rest of the project.
import { encryptionSettingsFromEnv, keyringFromSettings } from '../codec/settings.js';
import { idSecretFromEnv } from '../temporal/idempotency.js';
import { openStore, type Store } from './open.js';
import { createSealer } from './sealer.js';

export { BatchStore, BatchStoreError, type BatchRecord, type LoadedRow } from './batch-store.js';
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
  showStoreUrl,
  StoreConfigError,
  type Store,
  type StoreEngine,
  type StoreLocation,
} from './open.js';
export { createSealer, StoreSealError, type Sealer } from './sealer.js';

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
