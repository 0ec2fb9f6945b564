import * as z from 'zod';
import { AwsTokenLifecycleRuntime } from '../../src/adapters/aws/token-lifecycle-runtime';
import { tokenRuntimeFromEnv } from '../../src/adapters/aws/token-runtime';
import { TokenLifecycle } from '../../src/core/tokens/token-lifecycle';
import { createHandler } from '../_shared/create-handler';
import { lazySchema } from '../../src/core/shared/lazy-schema';
import { caseFoldedUuid } from '../../src/core/shared/uuid';

const { runtime } = tokenRuntimeFromEnv(AwsTokenLifecycleRuntime, [
  'TOKEN_TABLE_NAME',
  'INSTITUTION_SECRET_ARN',
  'ACCTOPS_BASE_URL',
  'ACCESS_TOKEN_LIFETIME_SECONDS',
  'TOKEN_LEASE_SECONDS',
  'SECRET_CACHE_TTL_SECONDS',
]);

/**
 * Invoked by the runbook for a user in `needs_attention` (or `acctops tokens recover`): retrieves
 * a new pair and puts the user back in the schedule. A revoked user needs `reactivate: true`; an
 * active user is left as it is unless `force: true` (the service refuses tokens our record holds).
 */
const eventSchema = /* @__PURE__ */ lazySchema(() =>
  z.strictObject({ externalId: caseFoldedUuid, reactivate: z.boolean().optional(), force: z.boolean().optional() }),
);

export const handler = createHandler({
  eventSchema,
  logFields: (event) => ({ externalId: event.externalId }),
  handler: (event, { logger, metrics, requestId }) =>
    new TokenLifecycle(runtime.lifecycleDeps({ logger, metrics, ownerPrefix: `recover-user:${requestId}` })).recover(event.externalId, {
      reactivate: event.reactivate,
      force: event.force,
    }),
});
