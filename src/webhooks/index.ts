// Webhook deliveries: callback URLs with per-call tokens, and the receiver that signals calls.
export * from './settings';
export * from './token';
export * from './delivery';
export * from './receiver';
export * from './callback-urls';
export * from './from-config';
