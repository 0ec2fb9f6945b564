import { DIALECTS, type Dialect } from '../../sandbox/dialect';
import { accessTokenExpiry } from '../../src/core/tokens/token-expiry';

/**
 * The sandbox dialects every integration suite of the client runs against (issue 13):
 * `describe.each(DIALECTS)('… (%s dialect)', (dialect) => …)`, one sandbox per dialect per file.
 * `ACCTOPS_TEST_DIALECT=minimal` narrows a run to one dialect while working on it.
 */
const only = process.env.ACCTOPS_TEST_DIALECT;
export const TEST_DIALECTS: readonly Dialect[] =
  only !== undefined && (DIALECTS as readonly string[]).includes(only) ? [only as Dialect] : DIALECTS;

export { DIALECTS, type Dialect };

/**
 * The expiry acctops stores for a freshly issued access token, as the token use cases compute it:
 * the JWT's `exp` (default dialect) or the issue time plus the spec's usual 30 minutes (an opaque
 * token without `expiresIn`, minimal dialect). For tests that seed a token store by hand.
 */
export function expiryOf(accessToken: string, issuedAt: number): number {
  return accessTokenExpiry({ accessToken }, issuedAt, 30 * 60_000).expiresAt;
}
