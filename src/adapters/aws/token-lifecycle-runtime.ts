import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { createAccountingClient } from '../../core/accounting-api';
import { cachedInstitutionCredential, type InstitutionCredential } from '../../core/credentials/institution-credential';
import { institutionCredentialProvider } from '../../core/credentials/institution-provider';
import type { CachedSecret } from '../../core/shared/cached-secret';
import { requiredEnv } from '../../core/shared/env';
import type { Logger } from '../../core/shared/logger';
import type { Metrics } from '../../core/shared/metrics';
import { TOKEN_EVENT_SOURCE } from '../../core/tokens/token-events';
import type { TokenLifecycleDeps } from '../../core/tokens/token-lifecycle';
import { EventBridgePublisher } from './eventbridge-publisher';
import { AwsSecretStore } from './secrets-manager';
import { AwsTokenRuntime } from './token-runtime';

/**
 * The root of the functions that act on one user (onboard-user, recover-user, revoke-user,
 * refresh-tokens): the token store, the institution credential (cached), the service's client and
 * the token events.
 */
export class AwsTokenLifecycleRuntime extends AwsTokenRuntime {
  private credential?: CachedSecret<InstitutionCredential>;
  private publisher?: EventBridgePublisher;

  /** TokenLifecycle's deps, with this invocation's logger and metrics. */
  lifecycleDeps(scope: { logger: Logger; metrics: Metrics; ownerPrefix?: string }): TokenLifecycleDeps {
    const { config } = this;
    this.credential ??= cachedInstitutionCredential(
      new AwsSecretStore(),
      requiredEnv(config.institutionSecretArn, 'INSTITUTION_SECRET_ARN'),
      {
        clock: config.clock,
        ttlMs: config.secretCacheTtlMs,
      },
    );
    if (config.eventBusName !== undefined) {
      this.publisher ??= new EventBridgePublisher({
        client: new EventBridgeClient({}),
        eventBusName: config.eventBusName,
        source: TOKEN_EVENT_SOURCE,
      });
    }
    const api = config.api ?? { timeoutMs: 10_000, maxAttempts: 3, maxElapsedMs: 20_000 };
    const client = createAccountingClient({
      baseUrl: requiredEnv(config.baseUrl, 'ACCTOPS_BASE_URL'),
      credentials: institutionCredentialProvider(this.credential),
      clock: config.clock,
      logger: scope.logger,
      timeoutMs: api.timeoutMs,
      retry: { maxAttempts: api.maxAttempts, maxElapsedMs: api.maxElapsedMs },
    });
    return {
      store: this.store(),
      institution: client.institution,
      events: this.publisher,
      clock: config.clock,
      logger: scope.logger,
      metrics: scope.metrics,
      ownerPrefix: scope.ownerPrefix,
      settings: {
        marginMs: config.marginMs,
        accessTokenLifetimeMs: config.accessTokenLifetimeMs,
        leaseMs: config.leaseMs,
        concurrency: config.concurrency,
      },
    };
  }
}
