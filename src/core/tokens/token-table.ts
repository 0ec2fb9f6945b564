import { TOKEN_TABLE } from '../../../contract/tables';

/**
 * The DynamoDB shape of the token table lives in contract/tables.ts, where the CDK construct reads
 * it too; the DynamoDB adapter and `createTokenTable` (test/helpers/dynamodb-tables.ts) read it here.
 * See docs/tokens.md, "Table and due index".
 */
export { TOKEN_TABLE };

/** The due-index shard of a record: FNV-1a of its key, so that it is stable and spreads evenly. */
export function dueShardOf(externalId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < externalId.length; i++) {
    hash ^= externalId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % TOKEN_TABLE.dueShardCount;
}
