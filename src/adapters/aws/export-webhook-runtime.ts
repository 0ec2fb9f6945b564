import { CompanyRegistry } from '../../core/companies/company-registry';
import { FORMATS } from '../../core/exports/formats/datasets';
import { registryAllowlist } from '../../core/exports/pipeline/company-allowlist';
import type { WebhookDeps, WebhookSecrets } from '../../core/exports/pipeline/webhook';
import { webhookSecretsFromStore } from '../../core/exports/pipeline/webhook-secrets';
import { requiredEnv } from '../../core/shared/env';
import { DynamoDbReplayGuard } from './dynamodb-replay-guard';
import { AwsExportRuntime, type Scope } from './export-runtime';
import { exportDynamo, exportRegistryTable } from './export-runtime-dynamodb';
import { exportSecretStore } from './export-runtime-secrets';
import { exportQueue } from './export-runtime-sqs';

/**
 * receive-export-webhook's root: the replay guard, the signing secret, the registry's allowlist and
 * the queue it enqueues the requested exports on.
 */
export class AwsExportWebhookRuntime extends AwsExportRuntime {
  replayGuard(): DynamoDbReplayGuard {
    return this.once(
      'replay',
      () =>
        new DynamoDbReplayGuard({
          client: exportDynamo(this),
          tableName: requiredEnv(this.config.replayTableName, 'WEBHOOK_REPLAY_TABLE_NAME'),
          clock: this.config.clock,
        }),
    );
  }

  webhookSecrets(): WebhookSecrets {
    return this.once('webhookSecrets', () =>
      webhookSecretsFromStore(exportSecretStore(this), requiredEnv(this.config.webhookSecretArn, 'WEBHOOK_SECRET_ARN'), {
        ttlMs: this.config.secretCacheTtlMs,
        clock: this.config.clock,
      }),
    );
  }

  /** receiveExportWebhook's deps, with this invocation's logger and metrics. */
  webhookDeps(scope: Scope): WebhookDeps {
    return {
      secrets: this.webhookSecrets(),
      replay: this.replayGuard(),
      queue: exportQueue(this),
      // Tenant isolation from the company registry: a GetItem per company, cached for a minute
      // across the invocations of this execution environment (no list of companies in the environment).
      allowedCompanies: this.once('allowedCompanies', () =>
        registryAllowlist(new CompanyRegistry(exportRegistryTable(this), { defaultFormats: FORMATS }), { clock: this.config.clock }),
      ),
      clock: this.config.clock,
      ...scope,
      maxBodyBytes: this.config.webhookMaxBodyBytes,
    };
  }
}
