import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SchedulerClient } from '@aws-sdk/client-scheduler';
import { atExpression, EventBridgeRevocationScheduler } from '../../../src/adapters/aws/revocation-scheduler';
import { FileRevocationQueue, MemoryRevocationQueue } from '../../../src/adapters/local/revocation-queue';
import type { Revocation, RevocationScheduler } from '../../../src/core/api-keys';
import { localClientConfig } from '../../helpers/aws-credentials';
import { type RunningScheduler, startScheduler } from '../../helpers/scheduler';

const T0 = Date.UTC(2026, 10, 2, 9, 0, 0);
const revocation = (n: number, revokeAt = T0 + 30 * 60_000): Revocation => ({
  secretId: 'arn:aws:secretsmanager:eu-central-1:000000000000:secret:acctops/test/company/x-AbCdEf',
  companyId: '0b7e4c9a-3f1d-4c2b-9a8e-5d6f7a8b9c0d',
  apiKeyId: `1b4e28ba-2fa1-41d2-883f-${String(n).padStart(12, '0')}`,
  keyPrefix: `sbx_Prefix0${n}`,
  revokeAt,
  rotationToken: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
});

async function all(scheduler: RevocationScheduler): Promise<Revocation[]> {
  const out: Revocation[] = [];
  for await (const r of scheduler.pending()) out.push(r);
  return out.sort((a, b) => a.apiKeyId.localeCompare(b.apiKeyId));
}

/** What every RevocationScheduler promises. */
function contract(make: () => Promise<RevocationScheduler>) {
  it('keeps one revocation per key; a repeat never pulls it earlier, a later time moves it', async () => {
    const scheduler = await make();
    await scheduler.schedule(revocation(1));
    await scheduler.schedule(revocation(2));
    await scheduler.schedule(revocation(1, T0)); // earlier: ignored
    expect(await all(scheduler)).toEqual([revocation(1), revocation(2)]);
    await scheduler.schedule(revocation(1, T0 + 3600_000)); // later: taken
    expect((await all(scheduler))[0]!.revokeAt).toBe(T0 + 3600_000);
  });

  it('refuses a malformed revocation naming the field', async () => {
    const scheduler = await make();
    await expect(scheduler.schedule({ ...revocation(1), apiKeyId: 'not-a-uuid' })).rejects.toMatchObject({ field: 'apiKeyId' });
  });
}

describe('local revocation queues', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'acctops-revocations-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  describe('memory', () => contract(async () => new MemoryRevocationQueue()));
  describe('file', () => contract(async () => new FileRevocationQueue({ path: join(dir, 'queue.json') })));

  it('the file queue survives a restart, hands out what is due in time order, and forgets what is done', async () => {
    const path = join(dir, 'state', 'revocations.json');
    const before = new FileRevocationQueue({ path });
    await before.schedule(revocation(2, T0 + 2000));
    await before.schedule(revocation(1, T0 + 1000));
    await before.schedule(revocation(3, T0 + 9000));

    const after = new FileRevocationQueue({ path });
    expect((await after.due(T0 + 5000)).map((r) => r.keyPrefix)).toEqual(['sbx_Prefix01', 'sbx_Prefix02']);
    await after.complete(revocation(1).apiKeyId);
    await after.complete(revocation(1).apiKeyId); // idempotent
    expect((await new FileRevocationQueue({ path }).due(T0 + 5000)).map((r) => r.keyPrefix)).toEqual(['sbx_Prefix02']);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(await readFile(path, 'utf8')).toContain('"format": "acctops.revocation-queue"');
  });

  it('concurrent schedules on one file all land', async () => {
    const path = join(dir, 'queue.json');
    await Promise.all([1, 2, 3, 4, 5].map((n) => new FileRevocationQueue({ path }).schedule(revocation(n))));
    expect(await all(new FileRevocationQueue({ path }))).toHaveLength(5);
  });

  it('a damaged file is a ValidationError naming the file, not a crash with its contents', async () => {
    const path = join(dir, 'queue.json');
    await writeFile(path, '{"format": "acctops.revocation-queue", "formatVersion": 1, "revocations": [{"apiKeyId": 7}]}');
    await expect(new FileRevocationQueue({ path }).due(T0)).rejects.toMatchObject({ code: 'validation_failed' });
  });
});

describe('EventBridge Scheduler revocations (real SDK, fake service)', () => {
  let scheduler: RunningScheduler;
  const GROUP = 'acctops-test-key-revocations';
  const TARGET = 'arn:aws:lambda:eu-central-1:000000000000:function:acctops-test-revoke-api-key';
  const ROLE = 'arn:aws:iam::000000000000:role/acctops-test-revocation-scheduler';

  beforeEach(async () => {
    scheduler = await startScheduler();
  });
  afterEach(() => scheduler.stop());

  const adapter = () =>
    new EventBridgeRevocationScheduler({
      groupName: GROUP,
      targetArn: TARGET,
      roleArn: ROLE,
      client: new SchedulerClient(localClientConfig(scheduler.endpoint)),
    });

  describe('contract', () => contract(async () => adapter()));

  it('writes a one-time UTC schedule that invokes the revoke function with the revocation, and deletes itself', async () => {
    await adapter().schedule(revocation(1, T0 + 1500));
    const [schedule, ...rest] = scheduler.schedules();
    expect(rest).toEqual([]);
    expect(schedule).toMatchObject({
      Name: `revoke-${revocation(1).apiKeyId}`,
      GroupName: GROUP,
      ScheduleExpression: 'at(2026-11-02T09:00:02)',
      ScheduleExpressionTimezone: 'UTC',
      FlexibleTimeWindow: { Mode: 'OFF' },
      ActionAfterCompletion: 'DELETE',
      Target: { Arn: TARGET, RoleArn: ROLE },
    });
    expect(JSON.parse(schedule!.Target.Input!)).toEqual(revocation(1, T0 + 1500));

    const invoked: unknown[] = [];
    expect(await scheduler.fireDue(T0 + 1000, async () => undefined)).toBe(0);
    expect(await scheduler.fireDue(T0 + 2000, async (_arn, input) => invoked.push(input))).toBe(1);
    expect(invoked).toEqual([revocation(1, T0 + 1500)]);
    expect(await all(adapter())).toEqual([]);
  });

  it('gives the schedule the dead-letter queue it is told of, so a revocation that cannot be delivered stays visible', async () => {
    const DLQ = 'arn:aws:sqs:eu-central-1:000000000000:acctops-test-failed-invocations';
    await new EventBridgeRevocationScheduler({
      groupName: GROUP,
      targetArn: TARGET,
      roleArn: ROLE,
      deadLetterArn: DLQ,
      client: new SchedulerClient(localClientConfig(scheduler.endpoint)),
    }).schedule(revocation(2, T0 + 1500));
    expect(scheduler.schedules()[0]!.Target).toMatchObject({ Arn: TARGET, DeadLetterConfig: { Arn: DLQ } });
  });

  it('cancel deletes an existing schedule, and asks no DeleteSchedule for one that does not exist, so a caller without the action is not refused for nothing (decision 113)', async () => {
    await adapter().schedule(revocation(3));
    await adapter().cancel(revocation(3).apiKeyId);
    expect(scheduler.schedules()).toEqual([]);
    expect(scheduler.calls.DeleteSchedule).toBe(1);

    scheduler.denied.add('DeleteSchedule');
    // Never made, or gone already (deleted, or fired): nothing to delete, no refusal.
    await expect(adapter().cancel(revocation(3).apiKeyId)).resolves.toBeUndefined();
    await expect(adapter().cancel(revocation(4).apiKeyId)).resolves.toBeUndefined();
    expect(scheduler.calls.DeleteSchedule).toBe(1);

    // One that exists is still deleted or refused, naming the schedule and the action.
    await adapter().schedule(revocation(5));
    await expect(adapter().cancel(revocation(5).apiKeyId)).rejects.toThrow(
      `EventBridge Scheduler DeleteSchedule failed for revoke-${revocation(5).apiKeyId}: AccessDeniedException: not authorized to perform: scheduler:DeleteSchedule`,
    );
    // A schedule that cannot be read is not taken for gone: the delete is tried.
    scheduler.denied.delete('DeleteSchedule');
    scheduler.denied.add('GetSchedule');
    await adapter().cancel(revocation(5).apiKeyId);
    expect(scheduler.schedules()).toEqual([]);
  });

  it('rounds at() up to the second, so a revocation never fires early', () => {
    expect(atExpression(T0)).toBe('at(2026-11-02T09:00:00)');
    expect(atExpression(T0 + 1)).toBe('at(2026-11-02T09:00:01)');
  });
});
