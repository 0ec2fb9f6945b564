import { targetError } from '../../../cli/operations/export-run';
import { ExitCode } from '../../../cli/exit-codes';
import { AwsSetupError, configuredRegion } from '../../../src/adapters/aws/aws-setup-error';
import { describeError } from '../../../cli/errors';
import { s3ObjectStoreFor } from '../../../src/adapters/aws/s3-target';
import { DirObjectStore } from '../../../src/adapters/local/dir-object-store';
import { ObjectStoreError } from '../../../src/core/exports/formats/period-errors';

/** An fs error as Node raises it, under the store's error and the export's, as a company's failure carries it. */
function failedWrite(code: string, message: string): Error {
  const fs = Object.assign(new Error(`${code}: ${message}, write`), { code, syscall: 'write' });
  const store = new ObjectStoreError('put', 'exports/company=c/period=2026-10/x', fs, undefined, 'file:///out/exports/x');
  return new Error('export of company c failed', { cause: store });
}

/**
 * Which failures of `--out` stop the command with one error (docs/exports.md, "Output errors"). A
 * full disk cannot be made by the end-to-end tests (test/cli/export-errors.test.ts covers a name
 * too long and a missing region through the binary), so the classification is tested here.
 */
describe('export --out: the errors of the target, not of a company', () => {
  const dir = new DirObjectStore('/out');

  it.each([
    ['ENOSPC', 'no space left on device', 'no space left on the device', /free space/],
    ['EDQUOT', 'disk quota exceeded', 'the disk quota is used up', /free space/],
    ['EROFS', 'read-only file system', 'the file system is read-only', /name a directory/],
    ['ENAMETOOLONG', 'name too long', 'the path or a name in it is too long', /shorter path/],
    [
      'ELOOP',
      'too many symbolic links encountered',
      'too many levels of symbolic links, as for a link that points to itself',
      /leads back to itself/,
    ],
  ])(
    '%s stops the command: exit 3, the location and the cause in words, how many companies were exported before it',
    (code, message, words, hint) => {
      const error = targetError(dir, '--out', failedWrite(code, message), 2);
      expect(error).toBeDefined();
      expect(error!.exitCode).toBe(ExitCode.config);
      expect(error!.code).toBe('export_target_unwritable');
      expect(error!.message).toBe(`--out cannot be written at /out/exports: ${words} (${code}); 2 companies were exported before it`);
      expect(error!.hint).toMatch(hint);
    },
  );

  it('a failure that is not the target’s (a reset connection under the store) stays the company’s', () => {
    expect(targetError(dir, '--out', failedWrite('ECONNRESET', 'socket hang up'), 0)).toBeUndefined();
    expect(targetError(dir, '--out', new Error('the service answered 500'), 0)).toBeUndefined();
  });

  it('no AWS region for an S3 target: exit 3, naming AWS_REGION in the hint', () => {
    const s3 = s3ObjectStoreFor({ bucket: 'some-bucket', prefix: 'x', region: 'eu-central-1' });
    const error = targetError(
      s3,
      '--out',
      new AwsSetupError('no AWS region is set', 'aws_region_missing', new Error('Region is missing')),
      0,
    );
    expect(error).toBeDefined();
    expect(error!.exitCode).toBe(ExitCode.config);
    expect(error!.message).toBe('--out cannot be written at s3://some-bucket/x/exports: no AWS region is set');
    expect(error!.hint).toMatch(/AWS_REGION/);
  });
});

describe('configuredRegion: a malformed region is not a missing one', () => {
  const refusedWith = async (message: string) => {
    try {
      await configuredRegion({ region: () => Promise.reject(new Error(message)) });
    } catch (error) {
      return error as AwsSetupError;
    }
    throw new Error('not refused');
  };

  it('the SDK refusing a region it cannot sign for is aws_region_malformed (exit 3, naming the profile), an empty one still missing', async () => {
    const malformed = await refusedWith('Region not accepted: region="eu central 1" is not a valid hostname component.');
    expect(malformed.code).toBe('aws_region_malformed');
    // The value is not repeated: it may be whatever was pasted into the profile.
    expect(malformed.message).not.toContain('eu central 1');
    expect(describeError(malformed)).toMatchObject({ exitCode: ExitCode.config, hint: expect.stringMatching(/profile/) });
    expect((await refusedWith('Region not accepted: region="" is not a valid hostname component.')).code).toBe('aws_region_missing');
    expect((await refusedWith('Region is missing')).code).toBe('aws_region_missing');
    expect(await configuredRegion({ region: () => Promise.resolve('eu-central-1') })).toBe('eu-central-1');
  });
});
