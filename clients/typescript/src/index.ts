/** Effect Ledger's TypeScript client: the same idempotency keys as every other client, and calls
 * through the HTTP gateway that take effect once however often they are retried. */
export * from './errors.js';
export * from './keys.js';
export * from './gateway.js';
export * from './tool.js';
export * from './native.js';
