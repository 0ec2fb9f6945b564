import { baseUrlProblem, isLoopbackHost } from '../../../contract/setting-rules';
import { AccountingApiError, AccountingClient, apiKeyAuth } from '../../../src/core/accounting-api';
import { ManualClock } from '../../../src/core/shared/clock';
import { ConfigError } from '../../../src/core/shared/errors';
import { fakeTransport, json, sequence } from './fake-transport';

/**
 * Plain http only to loopback (decision 92): every request carries a credential (an API key, the
 * institution credential, a token), and over http anyone on the path reads it. The rule is the
 * client's own, so every user of it (the functions, the CLI, the bench) is held to it.
 */

const KEY = 'sbx_PlainHttpKey0123456789abcdefghijk';

const LOOPBACK = [
  ['127.0.0.1', 'http://127.0.0.1:4010/api/v1'],
  ['another address of 127.0.0.0/8', 'http://127.45.6.7:4010/api/v1'],
  ['127.0.0.1 spelled as one number', 'http://2130706433:4010/api/v1'],
  ['127.0.0.1 spelled in hex and short', 'http://0x7f.1:4010/api/v1'],
  ['localhost', 'http://localhost:4010/api/v1'],
  ['LOCALHOST', 'http://LOCALHOST:4010/api/v1'],
  ['[::1]', 'http://[::1]:4010/api/v1'],
  ['[::1] written out', 'http://[0:0:0:0:0:0:0:1]:4010/api/v1'],
] as const;

const NOT_LOOPBACK = [
  ['a 10.x address', 'http://10.0.0.5:4010/api/v1'],
  ['a 192.168.x address', 'http://192.168.1.20/api/v1'],
  ['a 172.16.x address', 'http://172.16.0.9/api/v1'],
  ['a host name', 'http://accounting.example.com/api/v1'],
  ['a service container name', 'http://accounting-mock:4010/api/v1'],
  ['a name that resolves to 127.0.0.1 (nip.io)', 'http://127.0.0.1.nip.io:4010/api/v1'],
  ['a name that starts with localhost', 'http://localhost.example.com/api/v1'],
  ['a subdomain of localhost', 'http://api.localhost/api/v1'],
  ['localhost with a trailing dot (a DNS name)', 'http://localhost./api/v1'],
  ['0.0.0.0', 'http://0.0.0.0:4010/api/v1'],
  ['128.0.0.1', 'http://128.0.0.1/api/v1'],
  ['an IPv4-mapped [::ffff:127.0.0.1]', 'http://[::ffff:127.0.0.1]:4010/api/v1'],
  ['a unique-local IPv6 address', 'http://[fd00::2]:4010/api/v1'],
] as const;

function client(baseUrl: string, allowInsecureHttp?: boolean) {
  const fake = fakeTransport(sequence(json(200, { count: 0, next: null, previous: null, results: [] })));
  const make = () =>
    new AccountingClient({
      baseUrl,
      credentials: apiKeyAuth(KEY),
      transport: fake.transport,
      clock: ManualClock.autoAdvancing(),
      ...(allowInsecureHttp === undefined ? {} : { allowInsecureHttp }),
    });
  return { fake, make };
}

describe('isLoopbackHost and baseUrlProblem (contract/setting-rules.ts)', () => {
  it.each(LOOPBACK)('%s is loopback: plain http is accepted', (_what, url) => {
    expect(isLoopbackHost(new URL(url).hostname)).toBe(true);
    expect(baseUrlProblem(url)).toBeUndefined();
  });

  it.each(NOT_LOOPBACK)('%s is not loopback: plain http is refused, https is not', (_what, url) => {
    expect(isLoopbackHost(new URL(url).hostname)).toBe(false);
    expect(baseUrlProblem(url)).toBe('insecure_http');
    expect(baseUrlProblem(url, { allowInsecureHttp: true })).toBeUndefined();
    expect(baseUrlProblem(url.replace(/^http:/, 'https:'))).toBeUndefined();
  });

  it('judges plain http before the URL\u2019s other faults, and only where http is a scheme it takes', () => {
    expect(baseUrlProblem('http://accounting.example.com/api/v2')).toBe('insecure_http');
    expect(baseUrlProblem('http://127.0.0.1/api/v2')).toBe('version_path');
    expect(baseUrlProblem('http://accounting.example.com/api/v1', { schemes: ['https'] })).toBe('scheme');
  });
});

describe('the client refuses plain http to a host that is not loopback', () => {
  it.each(NOT_LOOPBACK)('%s: ConfigError on baseUrl saying why, and nothing is sent', (_what, url) => {
    const { fake, make } = client(url);
    let error: unknown;
    try {
      make();
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const issues = (error as ConfigError).issues;
    expect(issues).toHaveLength(1);
    expect(issues[0]!.path).toBe('baseUrl');
    expect(issues[0]!.message).toContain('must be https');
    expect(issues[0]!.message).toContain('in clear');
    // Neither the URL nor its host is quoted: a key may have been pasted into it.
    expect((error as Error).message).not.toContain(new URL(url).hostname);
    expect(fake.requests).toHaveLength(0);
  });

  it('the same URL with allowInsecureHttp: the client is made and the request goes out with the key', async () => {
    const { fake, make } = client('http://10.0.0.5:4010/api/v1', true);
    await make().transactions.list().all();
    expect(fake.requests.map((r) => [new URL(r.url).origin, r.headers.authorization])).toEqual([['http://10.0.0.5:4010', `Bearer ${KEY}`]]);
  });

  it('allowInsecureHttp false is the default', () => {
    expect(() => client('http://10.0.0.5:4010/api/v1', false).make()).toThrow(ConfigError);
  });

  it.each(LOOPBACK)('%s: accepted, and the request goes there', async (_what, url) => {
    const { fake, make } = client(url);
    await make().transactions.list().all();
    expect(fake.requests).toHaveLength(1);
    expect(isLoopbackHost(new URL(fake.requests[0]!.url).hostname)).toBe(true);
  });

  it('a variant made with withOptions keeps the rule', () => {
    const { make } = client('https://accounting.example.com/api/v1');
    expect(() => make().withOptions({ baseUrl: 'http://accounting.example.com/api/v1' })).toThrow(ConfigError);
  });

  it('a redirect from https to http on the same host is not followed: one request, an error', async () => {
    const fake = fakeTransport(
      sequence({
        status: 302,
        headers: { location: 'http://accounting.example.com/api/v1/accounting/transactions/' },
        body: '',
      }),
    );
    const error = await new AccountingClient({
      baseUrl: 'https://accounting.example.com/api/v1',
      credentials: apiKeyAuth(KEY),
      transport: fake.transport,
      clock: ManualClock.autoAdvancing(),
    }).transactions
      .list()
      .all()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AccountingApiError);
    expect(error).toMatchObject({ status: 302 });
    expect(fake.requests.map((r) => r.url)).toEqual(['https://accounting.example.com/api/v1/accounting/transactions/?page_size=1000']);
  });
});
