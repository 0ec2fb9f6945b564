import { ConditionalCheckFailedException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod';
import { exportSourceSchema, type ExportSource } from '../../core/exports/pipeline/export-jobs';
import {
  partResultSchema,
  publishAttemptSchema,
  type NewSplit,
  type PartLedger,
  type PartResult,
  type PublishAttempt,
  type SplitRecord,
} from '../../core/exports/pipeline/part-ledger';
import { RUN_LEDGER_TABLE } from '../../../contract/tables';
import {
  sameSource,
  type CompanyOutcome,
  type DiscoveryOutcome,
  type ExpectResult,
  type MonthlyRun,
  type RunLedger,
  type RunTally,
} from '../../core/exports/pipeline/run-ledger';
import { type Clock } from '../../core/shared/clock';
import { mapWithConcurrency } from '../../core/shared/concurrency';
import { parseWith } from '../../core/shared/errors';
import { lazySchema } from '../../core/shared/lazy-schema';

const PK = RUN_LEDGER_TABLE.partitionKey.name;
const SK = RUN_LEDGER_TABLE.sortKey.name;
const TTL = RUN_LEDGER_TABLE.timeToLiveAttribute;
const RUN_SK = '#run';
const LATEST_SK = '#latest';
const DAY_MS = 24 * 60 * 60 * 1000;

const runKey = (runId: string) => ({ [PK]: `run#${runId}`, [SK]: RUN_SK });
const companyKey = (runId: string, companyId: string) => ({ [PK]: `run#${runId}`, [SK]: `company#${companyId}` });
const discoveryKey = (runId: string, externalId: string) => ({ [PK]: `run#${runId}`, [SK]: `user#${externalId}` });
const latestKey = (period: string) => ({ [PK]: `period#${period}`, [SK]: LATEST_SK });
const splitKey = (splitId: string) => ({ [PK]: `split#${splitId}`, [SK]: '#split' });
const partKey = (splitId: string, index: number) => ({ [PK]: `split#${splitId}`, [SK]: `part#${String(index).padStart(5, '0')}` });

const splitItemSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    splitId: z.string(),
    companyId: z.string(),
    period: z.string(),
    runId: z.string(),
    parts: z.array(z.object({ index: z.number().int().nonnegative(), dateFrom: z.string(), dateTo: z.string() })),
    /** Absent on splits recorded before it (their parts used EUR). */
    defaultCurrency: z.string().optional(),
    createdAt: z.number(),
    /** A number set (DocumentClient: a Set of numbers); absent until the first part is done. */
    done: z.set(z.number()).optional(),
    publishedAt: z.number().optional(),
    reportedAt: z.number().optional(),
    /**
     * String sets, added to with ADD (idempotent, and they need no map to exist first): each
     * attempt as JSON text, and the ids of the refused ones.
     */
    publishAttempts: z.set(z.string()).optional(),
    refusedAttempts: z.set(z.string()).optional(),
  }),
);

const runItemSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    runId: z.string(),
    period: z.string(),
    timeZone: z.string(),
    scheduledAt: z.string(),
    startedAt: z.number(),
    summarizedAt: z.number().optional(),
    announcedAt: z.number().optional(),
    plannedAt: z.number().optional(),
    open: z.number().optional(),
  }),
);
const entryItemSchema = /* @__PURE__ */ lazySchema(() => z.object({ state: z.string(), source: exportSourceSchema.optional() }));

export interface DynamoDbRunLedgerOptions {
  client: DynamoDBClient;
  tableName: string;
  clock: Clock;
  /**
   * How long the ledger keeps a run (TTL). Longer than a year, so that last year's month can be
   * compared.
   * @default 400 days
   */
  retentionDays?: number;
  /**
   * Conditional puts in flight in `expectCompanies` (the planner's ledger entries). Distinct keys,
   * so DynamoDB on-demand serves them in parallel; at 16 the planner waited on round trips.
   * @default 64
   */
  planConcurrency?: number;
  /**
   * Items per query page of `tally` (DynamoDB also ends a page at 1 MB).
   * @default 1000
   */
  queryPageSize?: number;
}

/**
 * The run ledger on DynamoDB (table shape: RUN_LEDGER_TABLE). Each operation is one conditional
 * write, plus the run item's `open` counter (entries expected minus entries settled), which makes
 * `mayBeFinished` a single read instead of a query per message.
 *
 * No transactions (dynalite lacks them, and exactness does not need them): an entry's state is
 * the truth, read by `tally` with a strongly consistent query; the counter is only a hint. A
 * process that dies between an entry write and the counter update leaves the counter one off:
 * too low, a later worker tallies early and finds work open (harmless); too high, no worker sees
 * the run finish, and the hourly overdue check, which tallies, publishes the summary instead.
 */
export class DynamoDbRunLedger implements RunLedger, PartLedger {
  private readonly doc: DynamoDBDocumentClient;
  private readonly tableName: string;
  private readonly retentionMs: number;

  constructor(private readonly options: DynamoDbRunLedgerOptions) {
    this.doc = DynamoDBDocumentClient.from(options.client, { marshallOptions: { removeUndefinedValues: true } });
    this.tableName = options.tableName;
    this.retentionMs = (options.retentionDays ?? 400) * DAY_MS;
  }

  async startRun(run: Omit<MonthlyRun, 'summarizedAt' | 'announcedAt' | 'plannedAt'>): Promise<{ run: MonthlyRun; created: boolean }> {
    let created = true;
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...runKey(run.runId), ...run, open: 0, [TTL]: this.expiresAt() },
          ConditionExpression: 'attribute_not_exists(#pk)',
          ExpressionAttributeNames: { '#pk': PK },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      created = false;
    }
    const stored = (await this.getRun(run.runId))!;
    // Written on repeats as well: a crash between the two puts must not leave the month without a pointer.
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...latestKey(run.period), runId: run.runId, startedAt: stored.startedAt, [TTL]: this.expiresAt() },
          ConditionExpression: 'attribute_not_exists(#pk) OR #startedAt <= :startedAt',
          ExpressionAttributeNames: { '#pk': PK, '#startedAt': 'startedAt' },
          ExpressionAttributeValues: { ':startedAt': stored.startedAt },
        }),
      );
    } catch (error) {
      // A later run of the month is the latest already.
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
    return { run: stored, created };
  }

  async getRun(runId: string): Promise<MonthlyRun | undefined> {
    const out = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: runKey(runId), ConsistentRead: true }));
    if (!out.Item) return undefined;
    const { open: _open, ...run } = parseWith(runItemSchema, out.Item, `run ledger item run#${runId}`);
    return run;
  }

  async latestRun(period: string): Promise<MonthlyRun | undefined> {
    const out = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: latestKey(period), ConsistentRead: true }));
    const runId = out.Item?.runId;
    return typeof runId === 'string' ? this.getRun(runId) : undefined;
  }

  expectCompany(runId: string, companyId: string, source: ExportSource): Promise<ExpectResult> {
    return this.expect(
      companyKey(runId, companyId),
      { state: 'expected', source },
      (entry) => entry.state === 'expected' && entry.source !== undefined && sameSource(entry.source, source),
    );
  }

  /**
   * One conditional put per company (`planConcurrency` in flight), then one ADD to the run's counter for all the
   * page's new entries: the run item is no longer written once per company, which made it the
   * hot key of a large plan. A crash before the ADD leaves the counter too low: an extra tally.
   */
  async expectCompanies(runId: string, companyIds: readonly string[], source: ExportSource): Promise<ExpectResult[]> {
    const results = await mapWithConcurrency(companyIds, this.options.planConcurrency ?? 64, (companyId) =>
      this.expect(
        companyKey(runId, companyId),
        { state: 'expected', source },
        (entry) => entry.state === 'expected' && entry.source !== undefined && sameSource(entry.source, source),
        false,
      ),
    );
    const created = results.filter((r) => r === 'created').length;
    if (created > 0) await this.addOpen(runId, created);
    return results;
  }

  expectDiscovery(runId: string, externalId: string): Promise<ExpectResult> {
    return this.expect(discoveryKey(runId, externalId), { state: 'pending' }, (entry) => entry.state === 'pending');
  }

  async settleCompany(runId: string, companyId: string, outcome: CompanyOutcome): Promise<{ mayBeFinished: boolean }> {
    // A late success replaces a failure (a redriven message); nothing replaces a success.
    const from = outcome === 'completed' ? ['expected', 'failed'] : ['expected'];
    return this.settle(runId, companyKey(runId, companyId), outcome, from, 'expected');
  }

  settleDiscovery(runId: string, externalId: string, outcome: DiscoveryOutcome): Promise<{ mayBeFinished: boolean }> {
    // A late success replaces a failure (a redriven or re-sent discovery job); nothing replaces a success.
    const from = outcome === 'done' ? ['pending', 'failed'] : ['pending'];
    return this.settle(runId, discoveryKey(runId, externalId), outcome, from, 'pending');
  }

  async tally(runId: string): Promise<RunTally> {
    const tally: RunTally = {
      expected: 0,
      completed: 0,
      failed: 0,
      openCompanies: [],
      failedCompanies: [],
      pendingDiscoveries: 0,
      failedDiscoveries: 0,
      pendingUsers: [],
      failedUsers: [],
    };
    let start: Record<string, unknown> | undefined;
    do {
      const out = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: '#pk = :pk',
          ExpressionAttributeNames: { '#pk': PK, '#sk': SK, '#state': 'state' },
          ExpressionAttributeValues: { ':pk': `run#${runId}` },
          ProjectionExpression: '#sk, #state',
          ConsistentRead: true,
          Limit: this.options.queryPageSize ?? 1000,
          ExclusiveStartKey: start,
        }),
      );
      for (const item of out.Items ?? []) {
        const sk = String(item[SK]);
        const state = String(item.state);
        if (sk.startsWith('company#')) {
          const companyId = sk.slice('company#'.length);
          tally.expected += 1;
          if (state === 'completed') tally.completed += 1;
          else if (state === 'failed') {
            tally.failed += 1;
            tally.failedCompanies.push(companyId);
          } else tally.openCompanies.push(companyId);
        } else if (sk.startsWith('user#')) {
          const externalId = sk.slice('user#'.length);
          if (state === 'pending') {
            tally.pendingDiscoveries += 1;
            tally.pendingUsers.push(externalId);
          } else if (state === 'failed') {
            tally.failedDiscoveries += 1;
            tally.failedUsers.push(externalId);
          }
        }
      }
      start = out.LastEvaluatedKey;
    } while (start);
    return tally;
  }

  markSummarized(runId: string, at: number): Promise<boolean> {
    return this.markRun(runId, 'summarizedAt', at);
  }

  markAnnounced(runId: string, at: number): Promise<boolean> {
    return this.markRun(runId, 'announcedAt', at);
  }

  markPlanned(runId: string, at: number): Promise<boolean> {
    return this.markRun(runId, 'plannedAt', at);
  }

  /** Sets a time of the run item once; false when it was already set. */
  private async markRun(runId: string, field: 'summarizedAt' | 'announcedAt' | 'plannedAt', at: number): Promise<boolean> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: runKey(runId),
          UpdateExpression: 'SET #field = :at',
          ConditionExpression: 'attribute_exists(#pk) AND attribute_not_exists(#field)',
          ExpressionAttributeNames: { '#pk': PK, '#field': field },
          ExpressionAttributeValues: { ':at': at },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async startSplit(split: NewSplit): Promise<{ split: SplitRecord; created: boolean }> {
    let created = true;
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...splitKey(split.splitId), ...split, [TTL]: this.expiresAt() },
          ConditionExpression: 'attribute_not_exists(#pk)',
          ExpressionAttributeNames: { '#pk': PK },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      created = false;
    }
    return { split: (await this.getSplit(split.splitId))!, created };
  }

  async getSplit(splitId: string): Promise<SplitRecord | undefined> {
    const out = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: splitKey(splitId), ConsistentRead: true }));
    if (!out.Item) return undefined;
    const where = `run ledger item split#${splitId}`;
    const { done, publishAttempts, refusedAttempts, ...split } = parseWith(splitItemSchema, out.Item, where);
    const refused = refusedAttempts ?? new Set<string>();
    const attempts = [...(publishAttempts ?? [])].map((text): PublishAttempt => {
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      const attempt = parseWith(publishAttemptSchema, json, `${where} publishAttempts`);
      return { ...attempt, refused: refused.has(attempt.id) };
    });
    return {
      ...split,
      done: [...(done ?? [])].sort((a, b) => a - b),
      publishAttempts: attempts.sort((a, b) => a.at - b.at || compare(a.id, b.id)),
    };
  }

  /**
   * The result first, then the index into the done set (ADD to a number set is idempotent): an
   * index in the set always has its result stored, and a redelivered part changes no count.
   */
  async completePart(splitId: string, result: PartResult): Promise<{ done: number; parts: number }> {
    await this.doc.send(
      new PutCommand({
        TableName: this.tableName,
        // JSON text: a part's objects and totals are read back whole and checked by partResultSchema.
        Item: { ...partKey(splitId, result.index), result: JSON.stringify(result), [TTL]: this.expiresAt() },
      }),
    );
    const out = await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: splitKey(splitId),
        UpdateExpression: 'ADD #done :index',
        ConditionExpression: 'attribute_exists(#pk)',
        ExpressionAttributeNames: { '#pk': PK, '#done': 'done' },
        ExpressionAttributeValues: { ':index': new Set([result.index]) },
        ReturnValues: 'ALL_NEW',
      }),
    );
    const split = parseWith(splitItemSchema, out.Attributes, `run ledger item split#${splitId}`);
    return { done: split.done?.size ?? 0, parts: split.parts.length };
  }

  async partResults(splitId: string): Promise<PartResult[]> {
    const results: PartResult[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const out = await this.doc.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: '#pk = :pk AND begins_with(#sk, :part)',
          ExpressionAttributeNames: { '#pk': PK, '#sk': SK },
          ExpressionAttributeValues: { ':pk': `split#${splitId}`, ':part': 'part#' },
          ConsistentRead: true,
          ExclusiveStartKey: start,
        }),
      );
      for (const item of out.Items ?? []) {
        const where = `run ledger item split#${splitId} ${String(item[SK])}`;
        let json: unknown;
        try {
          json = JSON.parse(String(item.result));
        } catch {
          json = undefined;
        }
        results.push(parseWith(partResultSchema, json, where));
      }
      start = out.LastEvaluatedKey;
    } while (start);
    return results.sort((a, b) => a.index - b.index);
  }

  async recordPublishAttempt(splitId: string, attempt: Omit<PublishAttempt, 'refused'>): Promise<void> {
    const text = JSON.stringify({ id: attempt.id, at: attempt.at, ...(attempt.from !== undefined ? { from: attempt.from } : {}) });
    await this.addToSplitSet(splitId, 'publishAttempts', text);
  }

  async refusePublishAttempt(splitId: string, attemptId: string): Promise<void> {
    await this.addToSplitSet(splitId, 'refusedAttempts', attemptId);
  }

  markSplitPublished(splitId: string, at: number): Promise<boolean> {
    return this.markSplit(splitId, 'publishedAt', at);
  }

  markSplitReported(splitId: string, at: number): Promise<boolean> {
    return this.markSplit(splitId, 'reportedAt', at);
  }

  private async addToSplitSet(splitId: string, field: 'publishAttempts' | 'refusedAttempts', value: string): Promise<void> {
    await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: splitKey(splitId),
        UpdateExpression: 'ADD #field :value',
        ConditionExpression: 'attribute_exists(#pk)',
        ExpressionAttributeNames: { '#pk': PK, '#field': field },
        ExpressionAttributeValues: { ':value': new Set([value]) },
      }),
    );
  }

  /** Sets a time of the split item once; false when it was already set. A report also sets `publishedAt` if it is missing. */
  private async markSplit(splitId: string, field: 'publishedAt' | 'reportedAt', at: number): Promise<boolean> {
    const reported = field === 'reportedAt';
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: splitKey(splitId),
          UpdateExpression: reported ? 'SET #field = :at, #published = if_not_exists(#published, :at)' : 'SET #field = :at',
          ConditionExpression: 'attribute_exists(#pk) AND attribute_not_exists(#field)',
          ExpressionAttributeNames: { '#pk': PK, '#field': field, ...(reported ? { '#published': 'publishedAt' } : {}) },
          ExpressionAttributeValues: { ':at': at },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /** Puts a new entry and counts it open; on a repeat, tells `mine` from `taken` by reading it. */
  private async expect(
    key: Record<string, string>,
    fields: Record<string, unknown>,
    isMine: (entry: z.output<typeof entryItemSchema>) => boolean,
    count = true,
  ): Promise<ExpectResult> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...key, ...fields, [TTL]: this.expiresAt() },
          ConditionExpression: 'attribute_not_exists(#pk)',
          ExpressionAttributeNames: { '#pk': PK },
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const out = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: key, ConsistentRead: true }));
      return isMine(parseWith(entryItemSchema, out.Item, `run ledger item ${key[SK]}`)) ? 'mine' : 'taken';
    }
    if (count) await this.addOpen(key[PK]!.slice('run#'.length), 1);
    return 'created';
  }

  private async settle(
    runId: string,
    key: Record<string, string>,
    outcome: string,
    from: string[],
    openState: string,
  ): Promise<{ mayBeFinished: boolean }> {
    const values = Object.fromEntries(from.map((state, i) => [`:from${i}`, state]));
    let previous: string | undefined;
    try {
      const out = await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: key,
          UpdateExpression: 'SET #state = :outcome, #settledAt = :now',
          ConditionExpression: `attribute_exists(#pk) AND #state IN (${Object.keys(values).join(', ')})`,
          ExpressionAttributeNames: { '#pk': PK, '#state': 'state', '#settledAt': 'settledAt' },
          ExpressionAttributeValues: { ':outcome': outcome, ':now': this.options.clock.now(), ...values },
          ReturnValues: 'UPDATED_OLD',
        }),
      );
      previous = out.Attributes?.state as string | undefined;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
    const open = previous === openState ? await this.addOpen(runId, -1) : await this.openCount(runId);
    return { mayBeFinished: open <= 0 };
  }

  private async addOpen(runId: string, delta: number): Promise<number> {
    const out = await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: runKey(runId),
        UpdateExpression: 'ADD #open :delta',
        ConditionExpression: 'attribute_exists(#pk)',
        ExpressionAttributeNames: { '#pk': PK, '#open': 'open' },
        ExpressionAttributeValues: { ':delta': delta },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    return Number(out.Attributes?.open ?? 0);
  }

  private async openCount(runId: string): Promise<number> {
    const out = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: runKey(runId),
        ConsistentRead: true,
        ProjectionExpression: '#open',
        ExpressionAttributeNames: { '#open': 'open' },
      }),
    );
    return Number(out.Item?.open ?? 0);
  }

  private expiresAt(): number {
    return Math.floor((this.options.clock.now() + this.retentionMs) / 1000);
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
