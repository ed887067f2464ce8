// The worker's activities, one factory per concern. Each takes the same dependencies.
import { createAccountActivities } from './account.js';
import { createBatchActivities } from './batch.js';
import { createBatchRowActivities } from './batch-row.js';
import { createCallActivities } from './calls.js';
import type { ActivityDeps } from './deps.js';
import { lazyBatchStore, openStoreFromSettings } from '../store/index.js';
import { createSearchExportActivities } from './search-export.js';
import { createSearchPageActivities } from './search-pages.js';

export type { ActivityDeps } from './deps.js';

/**
 * Without a store of its own (createWorker passes one), the activities open the configured one
 * (PCDS_STORE_URL, or the embedded file under PCDS_DATA_DIR) on first use.
 */
export function createActivities(given: ActivityDeps) {
  const deps: ActivityDeps = {
    ...given,
    store: given.store ?? lazyBatchStore(() => openStoreFromSettings(given.config)),
  };
  return {
    ...createCallActivities(deps),
    ...createSearchPageActivities(deps),
    ...createSearchExportActivities(deps),
    ...createAccountActivities(deps),
    ...createBatchActivities(deps),
    ...createBatchRowActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
