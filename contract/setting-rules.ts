/**
 * Rules a setting must pass wherever it is given: the stage's settings at synth (lib/config/stage.ts),
 * the functions' environment at cold start (src/core/shared/env.ts) and, for the base URL, the CLI's
 * `--base-url` (cli/args.ts). One rule, so that what synthesizes also starts, and a variable set by
 * hand in the console is held to the same rule. Each caller words the problem for its reader.
 */

/** What is wrong with a base URL of the service, or `undefined`. */
export type BaseUrlProblem = 'not_a_url' | 'scheme' | 'user_info' | 'query_or_fragment' | 'version_path';

/**
 * The service's base URL, `/api/v1` included (docs/assumptions.md, Transport): the spec's paths are
 * relative to it, so a URL without it reaches the service's other routes. The client refuses user
 * info, a query and a fragment (src/core/accounting-api/client.ts). `https` only where the stage
 * deploys; the functions also take `http`, which the handler tests point at the sandbox.
 */
export function baseUrlProblem(raw: string, schemes: readonly ('http' | 'https')[] = ['http', 'https']): BaseUrlProblem | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'not_a_url';
  }
  if (!schemes.some((scheme) => url.protocol === `${scheme}:`)) return 'scheme';
  if (url.username !== '' || url.password !== '') return 'user_info';
  // On the text, not the URL: an empty `?` or `#` leaves `search` and `hash` empty.
  if (/[?#]/.test(raw)) return 'query_or_fragment';
  if (!/\/api\/v1\/*$/.test(url.pathname)) return 'version_path';
  return undefined;
}

/** The problems in words. None quotes the URL: it may hold a password or a pasted key. */
export const BASE_URL_PROBLEMS: Readonly<Record<BaseUrlProblem, string>> = {
  not_a_url: 'expected an absolute http(s) URL ending in /api/v1',
  scheme: 'expected an http(s) URL ending in /api/v1',
  user_info: 'must not carry user info (user:password@ before the host): the client refuses it',
  query_or_fragment: 'must not carry a query or fragment (the client refuses it)',
  version_path: 'must end with /api/v1',
};

export const TIME_ZONE_EXPECTED = 'expected an IANA time zone, e.g. Europe/Berlin';

/** A zone Intl knows, as the export's calendar reads it (src/core/exports/formats/period.ts). */
export function isTimeZone(value: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value });
    return true;
  } catch {
    return false;
  }
}
