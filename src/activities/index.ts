// The worker's activities, one factory per concern. Each takes the same dependencies.
import { createAccountActivities } from './account';
import { createBatchActivities } from './batch';
import { createCallActivities } from './calls';
import type { ActivityDeps } from './deps';
import { createSearchPageActivities } from './search-pages';

export type { ActivityDeps } from './deps';

export function createActivities(deps: ActivityDeps) {
  return {
    ...createCallActivities(deps),
    ...createSearchPageActivities(deps),
    ...createAccountActivities(deps),
    ...createBatchActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
