// The workflows the worker registers. One export line per workflow module.
export * from './endpoint-call.js';
export * from './person-search.js';
export * from './batch.js';
export * from './throttle.js';
export * from './search-export.js';
