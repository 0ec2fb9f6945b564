import { ConfigError } from '../../../src/core/shared/errors';
import { requiredEnv } from '../../../src/core/shared/env';

describe('requiredEnv', () => {
  it('returns a value that is set, falsy ones included', () => {
    expect(requiredEnv('acctops-tokens', 'TOKEN_TABLE_NAME')).toBe('acctops-tokens');
    expect(requiredEnv(0, 'TOKEN_REFRESH_MARGIN_SECONDS')).toBe(0);
    expect(requiredEnv('', 'X')).toBe('');
  });

  it('throws a ConfigError naming the variable when the function was not given it', () => {
    expect(() => requiredEnv(undefined, 'REFRESH_QUEUE_URL')).toThrow(ConfigError);
    expect(() => requiredEnv(undefined, 'REFRESH_QUEUE_URL')).toThrow(
      expect.objectContaining({ field: 'REFRESH_QUEUE_URL', issues: [{ path: 'REFRESH_QUEUE_URL', message: 'required by this function' }] }),
    );
  });
});
