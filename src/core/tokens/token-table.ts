/**
 * The DynamoDB shape of the token table: the single source of its names. The DynamoDB adapter and
 * `createTokenTable` (test/helpers/dynamodb-tables.ts) read them here. The CDK construct (lib/ may
 * not import src/) must repeat them, with an infra test comparing its synthesized table to this
 * constant so that the two cannot drift.
 *
 * The `due` index is sparse and KEYS_ONLY: only active records carry `dueShard`/`dueAt`, and the
 * index holds keys, never tokens. Taking or releasing a lease does not touch the index at all.
 * See docs/tokens.md, "Table and due index".
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

/** The due-index shard of a record: FNV-1a of its key, so that it is stable and spreads evenly. */
export function dueShardOf(externalId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < externalId.length; i++) {
    hash ^= externalId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % TOKEN_TABLE.dueShardCount;
}
