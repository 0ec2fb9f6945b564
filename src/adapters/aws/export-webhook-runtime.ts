import { CompanyRegistry } from '../../core/companies/company-registry';
import { FORMATS } from '../../core/exports/formats/datasets';
import { registryAllowlist } from '../../core/exports/pipeline/company-allowlist';
import type { WebhookDeps, WebhookSecrets } from '../../core/exports/pipeline/webhook';
import { webhookSecretsFromStore } from '../../core/exports/pipeline/webhook-secrets';
import { requiredEnv } from '../../core/shared/env';
import { DynamoDbReplayGuard } from './dynamodb-replay-guard';
import { AwsExportRuntime, type Scope } from './export-runtime';

/**
 * The webhook's runtime: the shared adapters of AwsExportRuntime, plus the replay guard, the
 * signing secret and the registry's allowlist. Its own module, so that only the webhook's bundle
 * carries them.
 */
export class AwsExportWebhookRuntime extends AwsExportRuntime {
  replayGuard(): DynamoDbReplayGuard {
    return this.once(
      'replay',
      () =>
        new DynamoDbReplayGuard({
          client: this.dynamo(),
          tableName: requiredEnv(this.config.replayTableName, 'WEBHOOK_REPLAY_TABLE_NAME'),
          clock: this.config.clock,
        }),
    );
  }

  webhookSecrets(): WebhookSecrets {
    return this.once('webhookSecrets', () =>
      webhookSecretsFromStore(this.secretStore(), requiredEnv(this.config.webhookSecretArn, 'WEBHOOK_SECRET_ARN'), {
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
      queue: this.queue(),
      // Tenant isolation from the company registry: a GetItem per company, cached for a minute
      // across the invocations of this execution environment (no list of companies in the environment).
      allowedCompanies: this.once('allowedCompanies', () =>
        registryAllowlist(new CompanyRegistry(this.registryTable(), { defaultFormats: FORMATS }), { clock: this.config.clock }),
      ),
      clock: this.config.clock,
      ...scope,
      maxBodyBytes: this.config.webhookMaxBodyBytes,
    };
  }
}
