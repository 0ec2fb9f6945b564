import * as z from 'zod';
import { ConfigError } from '../../../src/core/shared/errors';
import { envInt, envMs, envString, readEnvOf, requiredEnv } from '../../../src/core/shared/env';

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
