import { forgetRegisteredSecrets, redactString } from '../../../src/core/shared/redact';

/**
 * The Bearer pattern is the last net for a credential nobody registered: it must cut anything that
 * can be one, and leave the prose word after "bearer" alone (it blanked "token" in "the bearer
 * token expired").
 */
describe('redactor: the value after Bearer', () => {
  beforeEach(() => forgetRegisteredSecrets());

  it.each([
    ['Authorization: Bearer ak_live_Zx81kQ', 'Authorization: Bearer [REDACTED]'],
    ['Bearer 0f3a9c', 'Bearer [REDACTED]'],
    ['bearer MixedCase', 'bearer [REDACTED]'],
    ['Bearer abcdefghijklmnopqrst', 'Bearer [REDACTED]'],
    // 16 lowercase letters is where a word stops being taken for prose.
    ['Bearer abcdefghijklmnop', 'Bearer [REDACTED]'],
    ['header "Bearer tok-en", sent', 'header "Bearer [REDACTED]", sent'],
    ['Bearer a.b', 'Bearer [REDACTED]'],
  ])('cuts %j', (input, expected) => {
    expect(redactString(input)).toBe(expected);
  });

  it.each(['the bearer token expired', 'Bearer abcdefghijklmno', 'refused the Bearer credential.', 'no bearer value (empty)'])(
    'leaves the prose of %j',
    (input) => {
      expect(redactString(input)).toBe(input);
    },
  );
});
