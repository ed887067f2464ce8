// The service's contract as data and pure functions. No I/O.
export * from './catalogue.js';
export * from './inputs.js';
export * from './params.js';
export * from './validate.js';
export * from './status.js';
export * from './errors.js';
export * from './pcds-error.js';
export * from './envelope.js';
export * from './results.js';
export * from './classify.js';
export * from './callback-url.js';
export * from './usage.js';
export * from './mcp.js';
export * from './mcp-replies.js';
export * from './search-page.js';
export * from './tenant.js';
