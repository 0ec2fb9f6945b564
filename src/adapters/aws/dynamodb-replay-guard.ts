import { randomUUID } from 'node:crypto';
import { ConditionalCheckFailedException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, DynamoDBDocumentClient, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { REPLAY_TABLE } from '../../../contract/tables';
import type { ClaimResult, ReplayGuard } from '../../core/exports/pipeline/webhook';
import type { Clock } from '../../core/shared/clock';

const KEY = REPLAY_TABLE.partitionKey.name;
const TTL = REPLAY_TABLE.timeToLiveAttribute;

export interface DynamoDbReplayGuardOptions {
  client: DynamoDBClient;
  tableName: string;
  clock: Clock;
}

/**
 * Webhook event ids in DynamoDB (table shape: REPLAY_TABLE): a claim is one conditional put, which
 * succeeds only when the id is new or its earlier claim has expired (TTL deletes lazily, so the
 * condition does not rely on it). A claim is a lease (`confirmed: false`) until `confirm`, after
 * the enqueue, sets `confirmed` and the full expiry. A release or a confirm touches only this
 * instance's own claim: a concurrent delivery of the same id that won cannot be undone by the loser.
 */
export class DynamoDbReplayGuard implements ReplayGuard {
  private readonly doc: DynamoDBDocumentClient;
  /** Claim tokens of this process, by event id, until released. */
  private readonly claims = new Map<string, string>();

  constructor(private readonly options: DynamoDbReplayGuardOptions) {
    this.doc = DynamoDBDocumentClient.from(options.client);
  }

  async claim(eventId: string, leaseUntil: number): Promise<ClaimResult> {
    const token = randomUUID();
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.options.tableName,
          Item: {
            [KEY]: eventId,
            claim: token,
            confirmed: false,
            claimedAt: this.options.clock.now(),
            expiresAtMs: leaseUntil,
            [TTL]: Math.ceil(leaseUntil / 1000),
          },
          ConditionExpression: 'attribute_not_exists(#key) OR #expiresAtMs < :now',
          ExpressionAttributeNames: { '#key': KEY, '#expiresAtMs': 'expiresAtMs' },
          ExpressionAttributeValues: { ':now': this.options.clock.now() },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const existing = await this.doc.send(
        new GetCommand({ TableName: this.options.tableName, Key: { [KEY]: eventId }, ConsistentRead: true }),
      );
      // Gone in between (a release): in flight, so the sender tries again rather than giving up.
      return existing.Item?.confirmed === false || existing.Item === undefined ? 'in_flight' : 'accepted';
    }
    this.claims.set(eventId, token);
    return 'claimed';
  }

  async confirm(eventId: string, expiresAt: number): Promise<void> {
    const token = this.claims.get(eventId);
    if (token === undefined) return;
    await this.doc.send(
      new UpdateCommand({
        TableName: this.options.tableName,
        Key: { [KEY]: eventId },
        UpdateExpression: 'SET #confirmed = :true, #expiresAtMs = :expiresAtMs, #ttl = :ttl',
        ConditionExpression: '#claim = :claim',
        ExpressionAttributeNames: { '#confirmed': 'confirmed', '#expiresAtMs': 'expiresAtMs', '#ttl': TTL, '#claim': 'claim' },
        ExpressionAttributeValues: { ':true': true, ':expiresAtMs': expiresAt, ':ttl': Math.ceil(expiresAt / 1000), ':claim': token },
      }),
    );
    this.claims.delete(eventId);
  }

  async release(eventId: string): Promise<void> {
    const token = this.claims.get(eventId);
    if (token === undefined) return;
    try {
      await this.doc.send(
        new DeleteCommand({
          TableName: this.options.tableName,
          Key: { [KEY]: eventId },
          ConditionExpression: '#claim = :claim',
          ExpressionAttributeNames: { '#claim': 'claim' },
          ExpressionAttributeValues: { ':claim': token },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
    this.claims.delete(eventId);
  }
}
