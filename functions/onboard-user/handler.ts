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
  // The lease of the path back for a user in needs_attention (TokenLifecycle.onboard).
  'TOKEN_LEASE_SECONDS',
  'SECRET_CACHE_TTL_SECONDS',
]);

/** Invoked by a runbook or `acctops tokens onboard`: the user as the service knows it. */
const eventSchema = /* @__PURE__ */ lazySchema(() =>
  z.strictObject({
    externalId: caseFoldedUuid,
    username: z.string().min(1),
    email: z.email(),
  }),
);

/** Returns the outcome, the status and the expiry: never a token. */
export const handler = createHandler({
  eventSchema,
  logFields: (event) => ({ externalId: event.externalId }),
  handler: (event, { logger, metrics, requestId }) =>
    new TokenLifecycle(runtime.lifecycleDeps({ logger, metrics, ownerPrefix: `onboard-user:${requestId}` })).onboard(event),
});
