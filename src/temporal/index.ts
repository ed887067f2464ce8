// Local Temporal plumbing: the CLI binary, the dev server and the project's search attributes.
// Workflow code must import './search-attributes' directly: this index pulls in Node modules.
export * from './cli-binary';
export * from './dev-server';
export * from './search-attributes';
