// Local Temporal plumbing: the CLI binary, the dev server and the project's search attributes.
// Workflow code must import './search-attributes.js' directly: this index pulls in Node modules.
export * from './cli-binary.js';
export * from './dev-server.js';
export * from './search-attributes.js';
