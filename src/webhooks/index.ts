// Webhook deliveries: callback URLs with per-call tokens, and the receiver that signals calls.
export * from './settings.js';
export * from './token.js';
export * from './delivery.js';
export * from './receiver.js';
export * from './callback-urls.js';
export * from './from-config.js';
