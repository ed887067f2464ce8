// The workflow type names callers start and look for (the worker registers them in index.ts).
// Workflow code and clients may import this module: it holds names only.

/** The batch's type (its function is batchWorkflow in batch.ts). */
export const BATCH_WORKFLOW_TYPE = 'pcdsBatch';
/** A batch row's call runs under either name: the current one, or release 0.1.x's. */
export const ROW_WORKFLOW_TYPES = ['pcdsEndpointCall', 'endpointCall'] as const;
