import * as z from 'zod';
import { lazySchema } from '../shared/lazy-schema';
import { caseFoldedUuid } from '../shared/uuid';

/**
 * What onboarding a user takes. Its own module so that the CLI checks `--email` (and may check the
 * others) with this rule before anything runs, without loading the token lifecycle at start-up.
 */
export const onboardInputSchema = /* @__PURE__ */ lazySchema(() =>
  z.strictObject({
    externalId: caseFoldedUuid,
    username: z.string().trim().min(1).max(512),
    email: z.email().max(512),
  }),
);
export type OnboardInput = z.input<typeof onboardInputSchema>;
