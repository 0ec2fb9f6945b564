import { CompanyApiKeys, taggedKeyDirectory } from '../../core/api-keys';
import { registryCurrency } from '../../core/exports/pipeline/company-currency';
import { registryExportStanding } from '../../core/exports/pipeline/company-entry';
import type { ExportWorkerDeps, SourceCredentials } from '../../core/exports/pipeline/export-worker';
import { userTokenCredentials } from '../../core/exports/pipeline/user-token-credentials';
import { requiredEnv } from '../../core/shared/env';
import { ConfigError } from '../../core/shared/errors';
import type { Logger } from '../../core/shared/logger';
import { DynamoDbTokenReader } from './dynamodb-token-reader';
import { AwsExportRuntime, type Scope } from './export-runtime';
import { registryEntryReader } from './dynamodb-registry-entry';
import { exportDynamo, exportLedger } from './export-runtime-dynamodb';
import { exportEvents } from './export-runtime-events';
import { exportStore } from './export-runtime-s3';
import { exportSecretStore } from './export-runtime-secrets';
import { SqsExportQueue } from './sqs-export-queue';

/**
 * export-period's root: the bucket, the queue, the ledger and the bus of a run, the credentials
 * of a source (a company's key secret, or a user's token, read only), and the company registry's
 * entry of the company exported (its standing and default currency; GetItem only).
 */
export class AwsExportWorkerRuntime extends AwsExportRuntime {
  /** The user's tokens, read only: the worker never writes the token table (the refresh worker does). */
  tokenReader(): DynamoDbTokenReader {
    return this.once(
      'tokenReader',
      () => new DynamoDbTokenReader({ client: exportDynamo(this), tableName: requiredEnv(this.config.tokenTableName, 'TOKEN_TABLE_NAME') }),
    );
  }

  /** The credential of each kind of source: the company's key secret, or the user's token from the token store. */
  credentials(logger: Logger): SourceCredentials {
    const keys = this.once(
      'companyKeys',
      () =>
        new CompanyApiKeys(exportSecretStore(this), taggedKeyDirectory(exportSecretStore(this), { stage: this.config.stage }), {
          ttlMs: this.config.secretCacheTtlMs,
          clock: this.config.clock,
        }),
    );
    return (source, companyId) => {
      if (source.kind === 'user')
        return userTokenCredentials(this.tokenReader(), source.externalId, { clock: this.config.clock, companyId, logger });
      if (companyId === undefined) throw new ConfigError([{ path: 'companyId', message: 'an API-key source needs the company' }]);
      return keys.credentials(companyId);
    };
  }

  /**
   * processExportBatch's deps, with this invocation's logger and metrics. `deadlineAt`: the clock's
   * time no retry's wait may end after (the invocation's end less the last attempt and a reserve).
   */
  workerDeps(scope: Scope, options: { deadlineAt?: number } = {}): ExportWorkerDeps {
    return {
      exporter: this.exporter(options.deadlineAt),
      credentials: this.credentials(scope.logger),
      queue: this.queue(),
      ledger: exportLedger(this),
      events: exportEvents(this),
      clock: this.config.clock,
      ...scope,
      maxReceiveCount: requiredEnv(this.config.maxReceiveCount, 'EXPORT_MAX_RECEIVE_COUNT'),
      split: { maxTransactionsPerPart: requiredEnv(this.config.maxTransactionsPerPart, 'EXPORT_MAX_TRANSACTIONS_PER_PART') },
    };
  }

  /**
   * The export queue, which the worker sends to only when it splits a month into parts: unlike
   * the planner's and the webhook's (export-runtime-sqs.ts), its SQS package loads on that first send.
   */
  private queue(): SqsExportQueue {
    return this.once('queue', () => new SqsExportQueue({ queueUrl: requiredEnv(this.config.queueUrl, 'EXPORT_QUEUE_URL') }));
  }

  /** The company's raw registry entry by key (GetItem): the only registry access the worker has. */
  private registryEntry(): (companyId: string) => Promise<unknown> {
    return this.once('registryEntry', () =>
      registryEntryReader({
        client: exportDynamo(this),
        tableName: requiredEnv(this.config.registryTableName, 'COMPANY_REGISTRY_TABLE_NAME'),
      }),
    );
  }

  /** What exportCompanyPeriod needs from the environment. */
  exporter(deadlineAt?: number) {
    const api = this.config.api ?? { timeoutMs: 60_000, maxAttempts: 5, maxElapsedMs: 300_000 };
    return {
      store: exportStore(this),
      toolVersion: requiredEnv(this.config.toolVersion, 'ACCTOPS_TOOL_VERSION'),
      baseUrl: requiredEnv(this.config.baseUrl, 'ACCTOPS_BASE_URL'),
      client: {
        timeoutMs: api.timeoutMs,
        // The budget is per request; the deadline is the invocation's, so no wait outlives it.
        retry: { maxAttempts: api.maxAttempts, maxElapsedMs: api.maxElapsedMs, ...(deadlineAt !== undefined ? { deadlineAt } : {}) },
        ...(this.config.pageSize !== undefined ? { pageSize: this.config.pageSize } : {}),
        ...(this.config.dateTo !== undefined ? { dateTo: this.config.dateTo } : {}),
      },
      exporter: { taxReportFields: this.config.taxReportFields },
      // One GetItem per export, when it starts: `companies add --default-currency` applies from the next export on.
      companyCurrency: this.once('companyCurrency', () => registryCurrency(this.registryEntry())),
      // One more per export job: a removed company, or one whose entry is damaged, is not exported, whoever asked.
      companyRemovedAt: this.once('companyRemovedAt', () => registryExportStanding(this.registryEntry())),
    };
  }
}
