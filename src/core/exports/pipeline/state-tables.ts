/**
 * The DynamoDB shapes of the export pipeline's two tables: the single source of their names. The
 * adapters read them here; lib/constructs/exports.ts repeats them (lib may not import src), and
 * test/infra/exports.test.ts compares the synthesized tables with these constants.
 */

/**
 * The run ledger (RunLedger): one item collection per monthly run, `pk = run#<runId>`, with the
 * run's own item (`sk = #run`) and one item per company (`company#<id>`) and per user discovery
 * (`user#<externalId>`); plus one pointer per month (`pk = period#<YYYY-MM>`, `sk = #latest`).
 */
export const RUN_LEDGER_TABLE = {
  partitionKey: { name: 'pk', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
  /** Epoch seconds; DynamoDB deletes the item some time after. */
  timeToLiveAttribute: 'expiresAt',
  billingMode: 'PAY_PER_REQUEST',
} as const;

/** Webhook event ids already accepted (ReplayGuard), each until a replay would be stale anyway. */
export const REPLAY_TABLE = {
  partitionKey: { name: 'eventId', type: 'S' },
  timeToLiveAttribute: 'expiresAt',
  billingMode: 'PAY_PER_REQUEST',
} as const;
