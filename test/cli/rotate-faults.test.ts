import type * as SandboxModule from '../../sandbox';
import type { RunningSandbox } from '../../sandbox';
import { expectNoCanaries } from '../helpers/canary';
import { parseJson, runCliInProcess, tempStateDir, trackStateSecrets, type CliResult, serviceKeysOf } from '../helpers/cli';

type FaultRule = Parameters<RunningSandbox['admin']['faults']['add']>[0];

/** Faults the embedded sandbox of the next command starts with (a command's world lives in this process). */
const mockFaults: FaultRule[] = [];

jest.mock('../../sandbox', () => {
  const actual = jest.requireActual<typeof SandboxModule>('../../sandbox');
  return {
    ...actual,
    startSandbox: async (...args: Parameters<typeof actual.startSandbox>) => {
      const sandbox = await actual.startSandbox(...args);
      for (const rule of mockFaults) await sandbox.admin.faults.add(rule);
      return sandbox;
    },
  };
});

interface RotateBody {
  state: string;
  rolledBack: boolean | null;
  keyPrefix: string;
  previousKeyPrefix: string;
  previousKeyRevokeAt: string | null;
  previousKeyRevoked: string | null;
  previousKeyRevokeError: { code: string; message: string; exitCode: number; hint: string } | null;
}
interface StatusBody {
  companies: { companyId: string; keyPrefix: string; rotationInProgress: boolean; pendingRevocations: { keyPrefix: string }[] }[];
}

/**
 * `keys rotate` when the service fails part of the way, through runCli in process (what the binary
 * runs), so that the embedded sandbox can be given faults: the real binary starts its own.
 */
describe('acctops keys rotate: failures of the service during a rotation (local mode)', () => {
  let state: { dir: string; remove(): Promise<void> };
  const outputs: CliResult[] = [];

  const acctops = (...args: string[]): Promise<CliResult> => runCliInProcess(state.dir, args, outputs);
  const status = async (companyId: string) =>
    parseJson<StatusBody>(await acctops('--json', 'keys', 'status', '--company', companyId)).companies[0]!;
  const serviceKeys = (companyId: string) => serviceKeysOf(state.dir, companyId);

  beforeEach(async () => {
    state = await tempStateDir();
    mockFaults.length = 0;
  });
  afterEach(async () => {
    mockFaults.length = 0;
    await trackStateSecrets(state.dir);
    expectNoCanaries(outputs.splice(0), 'acctops output');
    await state.remove();
  });

  const firstCompany = async () => parseJson<StatusBody>(await acctops('--json', 'keys', 'status')).companies[0]!;

  it('--revoke-previous-now whose revocation fails: the report, exit 5, and a hint that revokes the leaked key without rotating again', async () => {
    const { companyId, keyPrefix: leaked } = await firstCompany();
    const liveBefore = (await serviceKeys(companyId)).filter((k) => k.revokedAt === null).map((k) => k.prefix);
    expect(liveBefore).toContain(leaked);
    mockFaults.push({ route: 'DELETE /api-keys/{publicId}/', times: 'always', fault: { type: 'status', status: 503 } });

    const rotated = await acctops('--json', 'keys', 'rotate', '--company', companyId, '--revoke-previous-now');
    expect(rotated.code).toBe(5);
    const report = parseJson<RotateBody>(rotated);
    expect(report).toMatchObject({ state: 'completed', previousKeyPrefix: leaked, previousKeyRevoked: 'failed' });
    expect(report.keyPrefix).not.toBe(leaked);
    // Still scheduled: without the hint, the grace period's revocation is what revokes it.
    expect(report.previousKeyRevokeAt).toMatch(/Z$/);
    const hintCommand = `acctops keys revoke-pending --company ${companyId} --prefix ${leaked}`;
    expect(report.previousKeyRevokeError).toMatchObject({ exitCode: 5, hint: expect.stringContaining(hintCommand) });
    expect(report.previousKeyRevokeError!.message).toContain(`previous key ${leaked}… could not be revoked and is still valid`);
    const line = JSON.parse(rotated.stderr.trim().split('\n').at(-1)!) as { error: { companyId: string; hint: string } };
    expect(line.error).toMatchObject({ companyId, hint: expect.stringContaining(hintCommand) });

    // The human form says so too, beside the report.
    mockFaults.length = 0;
    const { companyId: other } = (await acctops('--json', 'keys', 'status').then((r) => parseJson<StatusBody>(r))).companies[1]!;
    mockFaults.push({ route: 'DELETE /api-keys/{publicId}/', times: 'always', fault: { type: 'status', status: 503 } });
    const human = await acctops('keys', 'rotate', '--company', other, '--revoke-previous-now');
    expect(human.code).toBe(5);
    expect(human.stdout).toMatch(/Rotation of .*: completed/);
    expect(human.stdout).toMatch(/could NOT be revoked now and is still valid/);
    expect(human.stderr).toMatch(
      /^acctops: error: company [0-9a-f-]+: the rotation completed, but the previous key sbx_\w+… could not be revoked/,
    );
    expect(human.stderr).toContain('acctops keys revoke-pending --company');
    mockFaults.length = 0;

    const during = await status(companyId);
    expect(during.keyPrefix).toBe(report.keyPrefix);
    expect(during.pendingRevocations.map((r) => r.keyPrefix)).toEqual([leaked]);

    // Following the hint: exactly the leaked key is revoked, nothing is rotated.
    const followed = await acctops('--json', ...hintCommand.split(' ').slice(1));
    expect(followed.code).toBe(0);
    expect(parseJson(followed)).toMatchObject({ companyId, keys: [{ keyPrefix: leaked, outcome: 'revoked', error: null }] });
    const keys = await serviceKeys(companyId);
    expect(keys.find((k) => k.prefix === leaked)!.revokedAt).not.toBeNull();
    // The company's other keys (not acctops's) untouched, one rotation's key added, the leaked key gone.
    const liveAfter = keys.filter((k) => k.revokedAt === null).map((k) => k.prefix);
    expect(liveAfter.sort()).toEqual([...liveBefore.filter((p) => p !== leaked), report.keyPrefix].sort());
    const after = await status(companyId);
    expect(after).toMatchObject({ keyPrefix: report.keyPrefix, pendingRevocations: [] });

    // Again, as the runbook says to repeat it until it says `revoked`: the key is revoked already (exit 0), not "unknown".
    const again = await acctops('keys', 'revoke-pending', '--company', companyId, '--prefix', `${leaked}…`);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`  ${leaked}…  already_revoked\n`);
  }, 120_000);

  it('--revoke-previous-now after a plain rotation: an older pending key that cannot be revoked is its own error line naming its prefix, exit 5', async () => {
    const { companyId, keyPrefix: leaked } = await firstCompany();
    const plain = parseJson<RotateBody>(await acctops('--json', 'keys', 'rotate', '--company', companyId));
    // The previous key's DELETE goes through; the leaked key's, the next one, fails.
    mockFaults.push({ route: 'DELETE /api-keys/{publicId}/', after: 1, times: 'always', fault: { type: 'status', status: 503 } });
    const rotated = await acctops('--json', 'keys', 'rotate', '--company', companyId, '--revoke-previous-now');
    expect(rotated.code).toBe(5);
    const report = parseJson<
      RotateBody & { olderKeysRevoked: { keyPrefix: string; outcome: string; error: { exitCode: number; hint: string } }[] }
    >(rotated);
    expect(report).toMatchObject({ state: 'completed', previousKeyPrefix: plain.keyPrefix, previousKeyRevoked: 'revoked' });
    const hintCommand = `acctops keys revoke-pending --company ${companyId} --prefix ${leaked}`;
    expect(report.olderKeysRevoked[0]!.error).toMatchObject({
      exitCode: 5,
      message: expect.stringContaining(
        `the rotation completed, but the older key ${leaked}…, pending revocation, could not be revoked and is still valid: `,
      ),
    });
    expect(report.olderKeysRevoked).toEqual([
      {
        keyPrefix: leaked,
        apiKeyId: expect.any(String),
        outcome: 'failed',
        error: expect.objectContaining({ hint: expect.stringContaining(hintCommand) }),
        scheduleError: null,
      },
    ]);
    const lines = rotated.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { error: { keyPrefix?: string; hint: string } });
    expect(lines).toEqual([
      { error: expect.objectContaining({ companyId, keyPrefix: leaked, hint: expect.stringContaining(hintCommand) }) },
    ]);
    mockFaults.length = 0;
    expect((await status(companyId)).pendingRevocations.map((r) => r.keyPrefix)).toEqual([leaked]);

    const followed = await acctops('--json', ...hintCommand.split(' ').slice(1));
    expect(followed.code).toBe(0);
    expect(parseJson(followed)).toMatchObject({ keys: [{ keyPrefix: leaked, outcome: 'revoked' }] });
    expect((await serviceKeys(companyId)).find((k) => k.prefix === leaked)!.revokedAt).not.toBeNull();
  }, 120_000);

  it('a rotation failing at the list step is rolled back: exit 1, nothing pending, and the next rotation goes through', async () => {
    const { companyId, keyPrefix } = await firstCompany();
    mockFaults.push({ route: 'GET /api-keys/', times: 'always', fault: { type: 'status', status: 503 } });
    const failed = await acctops('keys', 'rotate', '--company', companyId);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toMatch(/: failed$/m);
    expect(failed.stdout).not.toMatch(/in_progress|Secrets Manager runs the steps now/);
    expect(failed.stderr).toMatch(/failed and was rolled back; AWSCURRENT is unchanged/);
    mockFaults.length = 0;

    expect(await status(companyId)).toMatchObject({ keyPrefix, rotationInProgress: false, pendingRevocations: [] });
    const next = await acctops('--json', 'keys', 'rotate', '--company', companyId);
    expect(next.code).toBe(0);
    expect(parseJson<RotateBody>(next)).toMatchObject({ state: 'completed', rolledBack: null, previousKeyPrefix: keyPrefix });
  }, 120_000);

  it('a rotation whose rollback cannot finish is said to have failed, not to be in progress (exit 1)', async () => {
    const { companyId, keyPrefix } = await firstCompany();
    // createSecret lists the keys, then creating the new one fails, and so does the rollback's list.
    mockFaults.push({ route: 'GET /api-keys/', after: 1, times: 'always', fault: { type: 'status', status: 503 } });
    mockFaults.push({ route: 'POST /api-keys/', times: 'always', fault: { type: 'status', status: 503 } });
    const failed = await acctops('--json', 'keys', 'rotate', '--company', companyId);
    expect(failed.code).toBe(1);
    expect(parseJson<RotateBody>(failed)).toMatchObject({ state: 'failed', rolledBack: false, keyPrefix });
    const error = JSON.parse(failed.stderr.trim().split('\n').at(-1)!) as { error: { code: string; message: string; hint: string } };
    expect(error.error.code).toBe('rotation_failed_not_rolled_back');
    expect(error.error.message).toMatch(/could not be rolled back: version \S+ stays AWSPENDING/);
    expect(error.error.hint).toContain('A rotation stuck in AWSPENDING');
    mockFaults.length = 0;
    expect(await status(companyId)).toMatchObject({ keyPrefix, rotationInProgress: true });
  }, 120_000);
});
