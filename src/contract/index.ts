// The service's contract as data and pure functions. No I/O.
export * from './catalogue';
export * from './inputs';
export * from './params';
export * from './validate';
export * from './status';
export * from './errors';
export * from './envelope';
export * from './results';
export * from './classify';
export * from './callback-url';
export * from './usage';
export * from './mcp';
