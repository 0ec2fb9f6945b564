/**
 * Rules a setting must pass wherever it is given: the stage's settings at synth (lib/config/stage.ts),
 * the functions' environment at cold start (src/core/shared/env.ts) and, for the base URL, the CLI's
 * `--base-url` (cli/args.ts). One rule, so that what synthesizes also starts, and a variable set by
 * hand in the console is held to the same rule. Each caller words the problem for its reader.
 */

/** What is wrong with a base URL of the service, or `undefined`. */
export type BaseUrlProblem = 'not_a_url' | 'scheme' | 'insecure_http' | 'user_info' | 'query_or_fragment' | 'version_path';

export interface BaseUrlRuleOptions {
  /** Default both; `https` only where the stage deploys. */
  schemes?: readonly ('http' | 'https')[];
  /**
   * Plain `http` to a host that is not loopback (isLoopbackHost). Default false: every request
   * carries a credential, and over `http` anyone on the path reads it. Only an explicit opt-in for a
   * trusted private network sets it (the CLI's `export --allow-insecure-http`, decision 92).
   */
  allowInsecureHttp?: boolean;
}

/**
 * The service's base URL, `/api/v1` included (docs/assumptions.md, Transport): the spec's paths are
 * relative to it, so a URL without it reaches the service's other routes. The client refuses user
 * info, a query and a fragment, and `http` to a host that is not loopback
 * (src/core/accounting-api/client.ts). `https` only where the stage deploys; the functions also
 * take `http` on loopback, which the handler tests point at the sandbox.
 */
export function baseUrlProblem(raw: string, options: BaseUrlRuleOptions = {}): BaseUrlProblem | undefined {
  const schemes = options.schemes ?? ['http', 'https'];
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'not_a_url';
  }
  if (!schemes.some((scheme) => url.protocol === `${scheme}:`)) return 'scheme';
  if (insecureHttp(url) && options.allowInsecureHttp !== true) return 'insecure_http';
  if (url.username !== '' || url.password !== '') return 'user_info';
  // On the text, not the URL: an empty `?` or `#` leaves `search` and `hash` empty.
  if (/[?#]/.test(raw)) return 'query_or_fragment';
  if (!/\/api\/v1\/*$/.test(url.pathname)) return 'version_path';
  return undefined;
}

/**
 * Whether a request to this host stays on this machine: `localhost`, `127.0.0.0/8` or `[::1]`.
 * Read from a parsed URL's `hostname`, which the WHATWG parser has made canonical (`0x7f.1`,
 * `2130706433` and `127.1` are `127.0.0.1`; `[0:0::1]` is `[::1]`; upper case is lowered), so a
 * look-alike is a name, and names other than `localhost` are refused whatever they resolve to:
 * `127.0.0.1.nip.io`, `localhost.example.com` and `x.localhost` (which only some resolvers keep on
 * the machine) go to DNS. `[::ffff:127.0.0.1]` is refused too: nobody needs it, and every extra
 * form is one more to get wrong.
 */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/** Plain `http` to a host that is not loopback: a credential sent there crosses the network in clear. */
export function insecureHttp(url: URL): boolean {
  return url.protocol === 'http:' && !isLoopbackHost(url.hostname);
}

/** Why plain `http` is refused, in words every caller shares (the client's ConfigError, the env, the CLI). */
export const INSECURE_HTTP_REASON =
  'must be https: plain http is accepted only to a loopback host (localhost, 127.0.0.0/8, [::1]), since every request carries a credential that would cross the network in clear';

/** The problems in words. None quotes the URL: it may hold a password or a pasted key. */
export const BASE_URL_PROBLEMS: Readonly<Record<BaseUrlProblem, string>> = {
  not_a_url: 'expected an absolute http(s) URL ending in /api/v1',
  scheme: 'expected an http(s) URL ending in /api/v1',
  insecure_http: INSECURE_HTTP_REASON,
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
