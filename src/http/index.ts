// The HTTP layer: the only code that talks to the service.
export * from './errors.js';
export * from './service-client.js';
export * from './service-clients.js';
