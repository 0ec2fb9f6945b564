import * as z from 'zod';
import { AwsSecretStore } from '../../src/adapters/aws/secrets-manager';
import { createAccountingClient } from '../../src/core/accounting-api';
import { cachedInstitutionCredential } from '../../src/core/credentials/institution-credential';
import { checkHealth, PROBES } from '../../src/core/health/check-health';
import { institutionCredentialProbe, serviceReachableProbe } from '../../src/core/health/probes';
import { systemClock } from '../../src/core/shared/clock';
import { envArn, envBaseUrl, readEnv } from '../../src/core/shared/env';
import { createHandler } from '../_shared/create-handler';
import { scheduledCorrelationId, scheduledOrManualEventSchema } from '../_shared/scheduled-event';
import { lazySchema } from '../../src/core/shared/lazy-schema';

const env = readEnv(z.object({ INSTITUTION_SECRET_ARN: envArn, ACCTOPS_BASE_URL: envBaseUrl }));

// No TTL: every check reads the secret, so a changed or broken secret shows at once.
const credential = cachedInstitutionCredential(new AwsSecretStore(), env.INSTITUTION_SECRET_ARN, { ttlMs: 0 });
const client = createAccountingClient({
  baseUrl: env.ACCTOPS_BASE_URL,
  credentials: {
    get: async () => ({ kind: 'institution', ...(await credential.get()) }),
    onAuthenticationError: () => credential.refreshAfterAuthError(),
  },
  // Inside checkHealth's 5 s probe timeout: one retry, then the probe reports the error.
  timeoutMs: 2_000,
  retry: { maxAttempts: 2, maxElapsedMs: 4_000 },
});
const probes = [institutionCredentialProbe(credential), serviceReachableProbe(client)];

/**
 * On its schedule (lib/constructs/monitoring.ts) or by hand (`acctops doctor` sends `{}`): every
 * probe runs, or with `{ "probes": [...] }` the named ones.
 */
const eventSchema = /* @__PURE__ */ lazySchema(() =>
  scheduledOrManualEventSchema('health-check', {
    probes: z
      .array(z.enum([PROBES.institutionCredential, PROBES.service]))
      .min(1)
      .optional(),
  }),
);

export const handler = createHandler({
  eventSchema,
  correlationId: scheduledCorrelationId,
  handler: async (event, { logger, metrics }) => {
    const wanted = new Set<string>(event.probes ?? probes.map((p) => p.name));
    const report = await checkHealth(
      { clock: systemClock, logger, metrics },
      probes.filter((p) => wanted.has(p.name)),
    );
    logger.info('health checked', { ok: report.ok, failed: report.probes.filter((p) => !p.ok).map((p) => p.name) });
    return report;
  },
});
