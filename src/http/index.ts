// The HTTP layer: the only code that talks to the service.
export * from './errors';
export * from './service-client';
export * from './service-clients';
export * from './permits';
