import { parseInstitutionCredential } from '../../../src/core/credentials/institution-credential';
import { ValidationError } from '../../../src/core/shared/errors';
import { forgetRegisteredSecrets, redactString } from '../../../src/core/shared/redact';

const KEY = 'sk_live_canary_4b1d9e2f';

/** Runs `fn`, expects a ValidationError, and proves the secret is nowhere in it. */
function rejection(fn: () => unknown, secret: string): ValidationError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(ValidationError);
  const error = caught as ValidationError;
  const everything = [error.message, JSON.stringify(error), JSON.stringify(error.issues), String(error.cause), error.stack].join('\n');
  expect(everything).not.toContain(secret);
  return error;
}

describe('parseInstitutionCredential', () => {
  afterEach(() => forgetRegisteredSecrets());

  it('accepts the plain form <institution_id>:<secret_key>, splitting at the first colon', () => {
    expect(parseInstitutionCredential(`inst-42:${KEY}`)).toEqual({ institutionId: 'inst-42', secretKey: KEY });
    expect(parseInstitutionCredential('inst-42:a:b:c')).toEqual({ institutionId: 'inst-42', secretKey: 'a:b:c' });
  });

  it('accepts the JSON form and ignores other members', () => {
    const raw = JSON.stringify({ institutionId: 'inst-42', secretKey: KEY, note: 'rotated by ops' });
    expect(parseInstitutionCredential(raw)).toEqual({ institutionId: 'inst-42', secretKey: KEY });
  });

  it('ignores surrounding whitespace, such as a trailing newline from a pasted value', () => {
    expect(parseInstitutionCredential(`  inst-42:${KEY}\n`)).toEqual({ institutionId: 'inst-42', secretKey: KEY });
    expect(parseInstitutionCredential(`\n{"institutionId":"inst-42","secretKey":"${KEY}"}\n`).secretKey).toBe(KEY);
  });

  it('registers the secret key with the redactor', () => {
    parseInstitutionCredential(`inst-42:${KEY}`);
    expect(redactString(`Institution: inst-42:${KEY}`)).toBe('Institution: inst-42:[REDACTED]');
  });

  it('rejects a value without a colon, naming the expected forms', () => {
    const error = rejection(() => parseInstitutionCredential(KEY), KEY);
    expect(error.source).toBe('institution credential secret');
    expect(error.message).toContain('<institution_id>:<secret_key>');
  });

  it('rejects an empty id or key, naming the field', () => {
    expect(rejection(() => parseInstitutionCredential(`:${KEY}`), KEY).field).toBe('institutionId');
    expect(rejection(() => parseInstitutionCredential('inst-42:'), 'inst-42:').field).toBe('secretKey');
  });

  it('rejects a key with spaces or control characters without quoting it', () => {
    const spaced = 'sk live canary 4b1d9e2f';
    const error = rejection(() => parseInstitutionCredential(`inst-42:${spaced}`), spaced);
    expect(error.issues).toEqual([{ path: 'secretKey', message: 'must be printable ASCII without spaces' }]);
  });

  it('rejects JSON with missing or mistyped members, naming them', () => {
    const error = rejection(
      () => parseInstitutionCredential(JSON.stringify({ institution_id: 'inst-42', secretKey: 987654321987 })),
      '987654321987',
    );
    expect(error.issues.map((i) => i.path).sort()).toEqual(['institutionId', 'secretKey']);
    const colon = rejection(() => parseInstitutionCredential(JSON.stringify({ institutionId: 'inst:42', secretKey: KEY })), KEY);
    expect(colon.issues).toEqual([{ path: 'institutionId', message: 'must be printable ASCII without spaces or ":"' }]);
  });

  it('rejects broken JSON without the parser message, which would quote the secret', () => {
    const broken = `{"institutionId":"inst-42","secretKey":"${KEY}"`;
    const error = rejection(() => parseInstitutionCredential(broken), KEY);
    expect(error.cause).toBeUndefined();
    expect(error.message).toContain('not valid JSON');
  });
});
