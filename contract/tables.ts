/**
 * The DynamoDB shapes of acctops' tables: key names and types, indexes, TTL attributes. The CDK
 * constructs build the tables from them, the adapters address items by them, and tests create
 * local tables from them, so a renamed key cannot leave the deployed table and the code apart.
 * Attribute types are DynamoDB's letters (`S`, `N`), which are also CDK's AttributeType values.
 */

/**
 * The user-token table. The `due` index is sparse and KEYS_ONLY: only active records carry
 * `dueShard`/`dueAt`, and the index holds keys, never tokens. Taking or releasing a lease does not
 * touch the index at all (docs/tokens.md, "Table and due index").
 */
export const TOKEN_TABLE = {
  partitionKey: { name: 'externalId', type: 'S' },
  dueIndex: {
    name: 'due',
    partitionKey: { name: 'dueShard', type: 'N' },
    sortKey: { name: 'dueAt', type: 'N' },
    projection: 'KEYS_ONLY',
  },
  /**
   * Active records are spread over this many index partitions so that the writes of 100,000
   * refreshes (dueAt always lands near "now + 30 minutes") do not all hit one partition. A record
   * moves to its new shard at its next write, and the planner queries shards 0..count-1: raising
   * the count is safe at once; lowering it hides the records left in the higher shards until each
   * is rewritten.
   */
  dueShardCount: 16,
  billingMode: 'PAY_PER_REQUEST',
} as const;

/**
 * The export run ledger (RunLedger): one item collection per monthly run, `pk = run#<runId>`, with
 * the run's own item (`sk = #run`) and one item per company (`company#<id>`) and per user
 * discovery (`user#<externalId>`); plus one pointer per month (`pk = period#<YYYY-MM>`, `sk = #latest`).
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

/** The company registry: one item per company the stage exports. */
export const REGISTRY_TABLE = {
  partitionKey: { name: 'companyId', type: 'S' },
  billingMode: 'PAY_PER_REQUEST',
} as const;
