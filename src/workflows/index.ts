// The workflows the worker registers. One export line per workflow module.
export * from './endpoint-call';
export * from './person-search';
export * from './batch';
export * from './throttle';
export * from './search-export';
