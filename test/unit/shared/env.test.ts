import * as z from 'zod';
import { ConfigError } from '../../../src/core/shared/errors';
import {
  envArn,
  envBaseUrl,
  envDecimal,
  envInt,
  envMs,
  envString,
  envTimeZone,
  readEnv,
  readEnvOf,
  requiredEnv,
} from '../../../src/core/shared/env';
import { parseStageSettings } from '../../../lib/config/stage';

const shape = {
  TABLE_NAME: envString,
  QUEUE_URL: z.url(),
  MARGIN_SECONDS: envInt(0, 3600).default(900),
};

describe('readEnvOf', () => {
  it('reads only the named variables: the others are neither required nor returned', () => {
    const env = readEnvOf(shape, ['TABLE_NAME', 'MARGIN_SECONDS'], { TABLE_NAME: 'tokens', QUEUE_URL: 'not a url' });
    expect(env).toEqual({ TABLE_NAME: 'tokens', MARGIN_SECONDS: 900 });
  });

  it('fails with a ConfigError naming a named variable that is missing or malformed', () => {
    expect(() => readEnvOf(shape, ['TABLE_NAME', 'QUEUE_URL'], { TABLE_NAME: 'tokens' })).toThrow(
      expect.objectContaining({ name: 'ConfigError', field: 'QUEUE_URL' }),
    );
    expect(() => readEnvOf(shape, ['MARGIN_SECONDS'], { MARGIN_SECONDS: '-1' })).toThrow(
      expect.objectContaining({ name: 'ConfigError', field: 'MARGIN_SECONDS' }),
    );
  });
});

describe('requiredEnv', () => {
  it('returns a value that is set, falsy ones included', () => {
    expect(requiredEnv('acctops-tokens', 'TOKEN_TABLE_NAME')).toBe('acctops-tokens');
    expect(requiredEnv(0, 'TOKEN_REFRESH_MARGIN_SECONDS')).toBe(0);
    expect(requiredEnv('', 'X')).toBe('');
  });

  it('throws a ConfigError naming the variable when the function was not given it', () => {
    expect(() => requiredEnv(undefined, 'REFRESH_QUEUE_URL')).toThrow(ConfigError);
    expect(() => requiredEnv(undefined, 'REFRESH_QUEUE_URL')).toThrow(
      expect.objectContaining({
        field: 'REFRESH_QUEUE_URL',
        issues: [{ path: 'REFRESH_QUEUE_URL', message: 'required by this function' }],
      }),
    );
  });
});

describe('envMs', () => {
  it('converts seconds by default, or the given unit, and leaves an unset value unset', () => {
    expect(envMs(90)).toBe(90_000);
    expect(envMs(0)).toBe(0);
    expect(envMs(2, 60_000)).toBe(120_000);
    expect(envMs(undefined)).toBeUndefined();
  });
});

/** The one issue `readEnv` raises for `value` under `schema`, or `undefined` when it reads. */
function issueOf(schema: z.ZodType, value: string | undefined): { path: string; message: string } | undefined {
  try {
    readEnv(z.object({ VARIABLE: schema }), { VARIABLE: value });
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    const issues = (error as ConfigError).issues;
    expect(issues).toHaveLength(1);
    return issues[0];
  }
}

describe('envInt', () => {
  it.each([
    ['', 'must not be blank (unset it for the default)'],
    [' ', 'must not be blank (unset it for the default)'],
    ['0x10', 'expected a whole number in decimal digits'],
    ['1e3', 'expected a whole number in decimal digits'],
    ['12.5', 'expected a whole number in decimal digits'],
    [' 300', 'expected a whole number in decimal digits'],
    ['+300', 'expected a whole number in decimal digits'],
    ['-5', 'expected a whole number in decimal digits'],
    ['3601', 'too big (maximum 3600)'],
  ])('refuses %j, naming the variable: %s (blank is not read as the default)', (value, message) => {
    expect(issueOf(envInt(0, 3600).default(300), value)).toEqual({ path: 'VARIABLE', message });
  });

  it('reads decimal digits, leading zeros included; unset takes the default', () => {
    const schema = z.object({ VARIABLE: envInt(0, 3600).default(300) });
    expect(readEnv(schema, { VARIABLE: '0' }).VARIABLE).toBe(0);
    expect(readEnv(schema, { VARIABLE: '0900' }).VARIABLE).toBe(900);
    expect(readEnv(schema, {}).VARIABLE).toBe(300);
  });

  it('takes a minus sign only where the range admits negatives', () => {
    expect(readEnv(z.object({ VARIABLE: envInt(-60, 60) }), { VARIABLE: '-5' }).VARIABLE).toBe(-5);
    expect(issueOf(envInt(-60, 60), '--5')).toEqual({ path: 'VARIABLE', message: 'expected a whole number in decimal digits' });
  });
});

describe('envDecimal', () => {
  it('reads a fraction as String() writes one, and refuses blank and hexadecimal', () => {
    const schema = z.object({ VARIABLE: envDecimal(0, 1) });
    expect(readEnv(schema, { VARIABLE: '0.05' }).VARIABLE).toBe(0.05);
    expect(readEnv(schema, { VARIABLE: String(1e-7) }).VARIABLE).toBe(1e-7);
    expect(issueOf(envDecimal(0, 1), '')?.message).toBe('must not be blank (unset it for the default)');
    expect(issueOf(envDecimal(0, 1), '0x1')?.message).toBe('expected a decimal number, e.g. 0.05');
  });
});

describe('envArn', () => {
  it("says what it expected, not zod's format name", () => {
    expect(issueOf(envArn, 'acctops/prod/institution')).toEqual({ path: 'VARIABLE', message: 'expected an ARN' });
  });
});

describe('envTimeZone', () => {
  it('refuses a zone Intl does not know, and blank', () => {
    expect(issueOf(envTimeZone, 'Mars/Base')).toEqual({ path: 'VARIABLE', message: 'expected an IANA time zone, e.g. Europe/Berlin' });
    expect(issueOf(envTimeZone, ' ')?.message).toBe('expected an IANA time zone, e.g. Europe/Berlin');
    expect(issueOf(envTimeZone, 'America/New_York')).toBeUndefined();
  });
});

describe('envBaseUrl', () => {
  const PASSWORD = 's3cretPASS';
  it.each([
    ['user info', `https://ops:${PASSWORD}@accounting.example.com/api/v1`, 'must not carry user info'],
    ['a query', `https://accounting.example.com/api/v1?key=${PASSWORD}`, 'must not carry a query or fragment'],
    ['an empty query', 'https://accounting.example.com/api/v1?', 'must not carry a query or fragment'],
    ['a fragment', 'https://accounting.example.com/api/v1#x', 'must not carry a query or fragment'],
    ['no version path', 'https://accounting.example.com', 'must end with /api/v1'],
    ['another path', 'https://accounting.example.com/api/v2', 'must end with /api/v1'],
    ['another scheme', 'ftp://accounting.example.com/api/v1', 'expected an http(s) URL ending in /api/v1'],
    ['plain http to a host that is not loopback', 'http://accounting.example.com/api/v1', 'plain http is accepted only to a loopback host'],
    ['no URL', 'accounting.example.com/api/v1', 'expected an absolute http(s) URL ending in /api/v1'],
    ['nothing', '', 'expected an absolute http(s) URL ending in /api/v1'],
  ])('refuses a URL with %s, naming the variable, never the value', (_what, value, message) => {
    const issue = issueOf(envBaseUrl, value);
    expect(issue).toEqual({ path: 'VARIABLE', message: expect.stringContaining(message) });
    expect(issue!.message).not.toContain(PASSWORD);
    expect(issue!.message).not.toContain('accounting.example.com');
  });

  it('holds the functions to the rule the stage is held to at synth (http aside, which the handler tests use)', () => {
    const urls = [
      'https://accounting.example.com/api/v1',
      'https://accounting.example.com/api/v1/',
      'https://accounting.example.com/proxy/api/v1',
      'https://accounting.example.com',
      'https://accounting.example.com/api/v1/x',
      'https://u:p@accounting.example.com/api/v1',
      'https://accounting.example.com/api/v1?a=1',
      'https://accounting.example.com/api/v1#',
    ];
    const stage = (baseUrl: string) => {
      try {
        parseStageSettings({ baseUrl }, 'stages.dev');
        return undefined;
      } catch (error) {
        return (error as { issues: { path: string; message: string }[] }).issues.find((i) => i.path === 'stages.dev.baseUrl')?.message;
      }
    };
    // Compared by whether each refuses, and why in its first words: the synth adds where the URL would land.
    const why = (message: string | undefined) => message?.split(' (')[0];
    expect(urls.map((url) => why(issueOf(envBaseUrl, url)?.message))).toEqual(urls.map((url) => why(stage(url))));
    expect(urls.map((url) => issueOf(envBaseUrl, url) === undefined)).toEqual([true, true, true, false, false, false, false, false]);
    expect(issueOf(envBaseUrl, 'http://127.0.0.1:4010/api/v1')).toBeUndefined();
  });
});
