// The worker's activities, one factory per concern. Each takes the same dependencies.
import { createAccountActivities } from './account.js';
import { createBatchActivities } from './batch.js';
import { createBatchRowActivities } from './batch-row.js';
import { createCallActivities } from './calls.js';
import type { ActivityDeps } from './deps.js';
import { createSearchPageActivities } from './search-pages.js';

export type { ActivityDeps } from './deps.js';

export function createActivities(deps: ActivityDeps) {
  return {
    ...createCallActivities(deps),
    ...createSearchPageActivities(deps),
    ...createAccountActivities(deps),
    ...createBatchActivities(deps),
    ...createBatchRowActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
