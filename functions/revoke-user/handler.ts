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
  'TOKEN_LEASE_SECONDS',
  'SECRET_CACHE_TTL_SECONDS',
]);

/** Invoked by a runbook or `acctops tokens revoke`. */
const eventSchema = /* @__PURE__ */ lazySchema(() => z.strictObject({ externalId: caseFoldedUuid }));

/** Expires the user's tokens at the service and marks it revoked; idempotent. */
export const handler = createHandler({
  eventSchema,
  logFields: (event) => ({ externalId: event.externalId }),
  handler: (event, { logger, metrics, requestId }) =>
    new TokenLifecycle(runtime.lifecycleDeps({ logger, metrics, ownerPrefix: `revoke-user:${requestId}` })).revoke(event.externalId),
});
