// The public API plus the backoff formula, which index.ts keeps internal.
export * from '../../../src/core/accounting-api';
export { backoffMs as backoffForTest } from '../../../src/core/accounting-api/retry';
