import { keyPrefixArg } from '../../../cli/args';
import { matchListedKey, MIN_LISTED_PREFIX_CHARS, namesAKey, shownPrefix } from '../../../src/core/api-keys';
import { keyPrefix } from '../../../src/core/shared/redact';

const KEY = 'sbx_AbCdEfGh1234567890abcdefghijklmnop';
const live = (publicId: string, prefix: string) => ({ publicId, prefix, revokedAt: null });

describe('matchListedKey: the listed key whose prefix the full key starts with (spec §5.1 fixes no length)', () => {
  it.each([
    ['8 characters after the underscore (the sandbox default)', 'sbx_AbCdEfGh'],
    ['6 characters', 'sbx_AbCdEf'],
    ['4 characters, the least that names a key', 'sbx_AbCd'],
    ['20 characters', 'sbx_AbCdEfGh1234567890'],
  ])('%s', (_, prefix) => {
    const keys = [live('other', 'sbx_ZzZzZzZz'), live('mine', prefix), { publicId: 'old', prefix, revokedAt: '2026-10-01T00:00:00Z' }];
    expect(matchListedKey(keys, KEY)).toEqual({ kind: 'found', key: keys[1] });
  });

  it('a service prefix holding an underscore (sk_live_…), listed with 6 characters after it', () => {
    const key = 'sk_live_Q1w2E3r4T5y6U7i8';
    expect(matchListedKey([live('a', 'sk_live_Q1w2E3'), live('b', 'sk_live_Zx9')], key)).toMatchObject({
      kind: 'found',
      key: { publicId: 'a' },
    });
  });

  it('a prefix too short to name a key matches nothing, and is reported as such', () => {
    expect(MIN_LISTED_PREFIX_CHARS).toBe(4);
    expect(namesAKey('sbx_AbC')).toBe(false);
    expect(namesAKey('sk_live_')).toBe(false);
    expect(namesAKey('sbxAbCdEf')).toBe(false);
    const short = live('mine', 'sbx_AbC');
    expect(matchListedKey([short, live('none', '')], KEY)).toEqual({ kind: 'none', tooShort: [short] });
  });

  it('two live keys whose prefixes both begin the key are ambiguous, never a guess', () => {
    const keys = [live('a', 'sbx_AbCd'), live('b', 'sbx_AbCdEfGh')];
    expect(matchListedKey(keys, KEY)).toEqual({ kind: 'ambiguous', keys });
  });

  it('nothing listed begins the key: none', () => {
    expect(matchListedKey([live('a', 'sbx_Zz12Zz12')], KEY)).toEqual({ kind: 'none', tooShort: [] });
  });

  it('shownPrefix: a long listed prefix is shown as our logs show a key (8 characters after the first underscore)', () => {
    expect(shownPrefix('sbx_AbCdEfGh1234567890')).toBe('sbx_AbCdEfGh');
    expect(shownPrefix('sbx_AbCdEf')).toBe('sbx_AbCdEf');
  });
});

describe('keys revoke-pending --prefix takes the prefix as our logs show it', () => {
  it('accepts the short prefix of a key whose service prefix holds an underscore, and refuses a whole key', () => {
    const shown = keyPrefix('sk_live_Q1w2E3r4T5y6U7i8');
    expect(shown).toBe('sk_live_Q1w');
    expect(keyPrefixArg(`${shown}…`)).toBe(shown);
    expect(keyPrefixArg('sbx_AbCd1234')).toBe('sbx_AbCd1234');
    expect(() => keyPrefixArg('sk_live_Q1w2E3r4T5y6U7i8')).toThrow(/never the whole key/);
  });
});
