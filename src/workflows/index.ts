// The workflows the worker registers: each exported function is a workflow type, named by its
// export. Every current name starts with "pcds", so `WorkflowType STARTS_WITH "pcds"` finds all of
// this service's workflows in a shared namespace; new starts use these names.
import { batchWorkflow } from './batch.js';
import { pcdsEndpointCall } from './endpoint-call.js';
import { pcdsPersonSearch } from './person-search.js';
import { pcdsSearchExport } from './search-export.js';
import { pcdsKeyThrottle } from './throttle.js';

export {
  pcdsEndpointCall,
  pcdsPersonSearch,
  pcdsSearchExport,
  pcdsKeyThrottle,
  // The batch workflow's function keeps its name in batch.ts; its type is pcdsBatch.
  batchWorkflow as pcdsBatch,
};

// The names of release 0.1.x, still registered so workflows started under them keep running on
// new workers and their recorded histories replay. Each runs the same function as its new name.
export {
  pcdsEndpointCall as endpointCall,
  pcdsPersonSearch as personSearch,
  pcdsSearchExport as searchExport,
  pcdsKeyThrottle as throttle,
  batchWorkflow,
};

export type { EndpointCallInput } from './endpoint-call.js';
export type { PersonSearchInput, PersonSearchResult } from './person-search.js';
export type { SearchExportInput, SearchExportSummary } from './search-export.js';
