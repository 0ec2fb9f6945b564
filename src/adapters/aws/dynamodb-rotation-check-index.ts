import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { RotationCandidate, RotationCheckIndex } from '../../core/api-keys';
import { REGISTRY_TABLE } from '../../core/companies/company-registry';

const KEY = REGISTRY_TABLE.partitionKey.name;
/** The registry attribute the rotation sweep keeps (epoch ms); `companies add` rewrites the item without it, which only means one more look. */
export const ROTATION_CHECK_AFTER = 'rotationCheckAfter';

/**
 * The rotation sweep's view of the company registry table: a page scan of a small projection
 * (id, removedAt, rotationCheckAfter: tens of bytes an item, so 10,000 companies are a few 1 MB
 * pages) and an UpdateItem of one attribute that never creates an item nor revives a removed one.
 */
export class DynamoDbRotationCheckIndex implements RotationCheckIndex {
  private readonly doc: DynamoDBDocumentClient;

  constructor(private readonly options: { client: DynamoDBClient; tableName: string; pageSize?: number }) {
    this.doc = DynamoDBDocumentClient.from(options.client);
  }

  async *pages(): AsyncIterable<RotationCandidate[]> {
    let start: Record<string, unknown> | undefined;
    do {
      const out = await this.doc.send(
        new ScanCommand({
          TableName: this.options.tableName,
          Limit: this.options.pageSize ?? 1000,
          ExclusiveStartKey: start,
          ProjectionExpression: '#k, removedAt, #c',
          ExpressionAttributeNames: { '#k': KEY, '#c': ROTATION_CHECK_AFTER },
        }),
      );
      const page: RotationCandidate[] = [];
      for (const item of out.Items ?? []) {
        const companyId = item[KEY];
        // Malformed items are the registry's findings (`acctops doctor`); the sweep just passes them by.
        if (typeof companyId !== 'string' || item.removedAt !== undefined) continue;
        const after = item[ROTATION_CHECK_AFTER];
        page.push(typeof after === 'number' && Number.isFinite(after) ? { companyId, checkAfter: after } : { companyId });
      }
      yield page;
      start = out.LastEvaluatedKey;
    } while (start !== undefined);
  }

  async setCheckAfter(companyId: string, at: number): Promise<void> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.options.tableName,
          Key: { [KEY]: companyId },
          UpdateExpression: 'SET #c = :at',
          ConditionExpression: 'attribute_exists(#k) AND attribute_not_exists(removedAt)',
          ExpressionAttributeNames: { '#k': KEY, '#c': ROTATION_CHECK_AFTER },
          ExpressionAttributeValues: { ':at': at },
        }),
      );
    } catch (error) {
      // Removed (or deleted) since the scan: nothing to mark.
      if (error instanceof ConditionalCheckFailedException) return;
      throw error;
    }
  }
}
