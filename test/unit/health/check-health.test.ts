import { checkHealth, PROBES, ProbeTimeoutError, type HealthProbe } from '../../../src/core/health/check-health';
import { ManualClock } from '../../../src/core/shared/clock';
import { AcctopsError } from '../../../src/core/shared/errors';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { MemoryMetrics } from '../../../src/core/shared/metrics';
import { forgetRegisteredSecrets, registerSecret } from '../../../src/core/shared/redact';

const CANARY = 'canary-institution-secret-4f1c9e';

function probe(name: string, check: HealthProbe['check']): HealthProbe {
  return { name, check };
}

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

afterEach(() => forgetRegisteredSecrets());

describe('checkHealth', () => {
  it('reports healthy when every probe resolves, with their safe details', async () => {
    const clock = new ManualClock();
    const metrics = new MemoryMetrics();
    const report = await checkHealth({ clock, metrics }, [
      probe(PROBES.institutionCredential, async () => 'version v1'),
      probe(PROBES.service, async () => undefined),
    ]);
    expect(report).toEqual({
      ok: true,
      checkedAt: new Date(clock.now()).toISOString(),
      probes: [
        { name: PROBES.institutionCredential, ok: true, durationMs: 0, detail: 'version v1' },
        { name: PROBES.service, ok: true, durationMs: 0 },
      ],
    });
    expect(metrics.recorded).toEqual([]);
  });

  it('reports a failing probe with its class and code, counts it, and keeps secrets out', async () => {
    registerSecret(CANARY);
    const logger = new MemoryLogger();
    const metrics = new MemoryMetrics();
    const report = await checkHealth({ clock: new ManualClock(), logger, metrics }, [
      probe(PROBES.institutionCredential, async () => {
        throw new AcctopsError(`cannot use ${CANARY}`, { code: 'secret_unreadable' });
      }),
      probe(PROBES.service, async () => 'ok'),
    ]);

    expect(report.ok).toBe(false);
    expect(report.probes[0]).toEqual({
      name: PROBES.institutionCredential,
      ok: false,
      durationMs: 0,
      error: { name: 'AcctopsError', code: 'secret_unreadable', message: 'cannot use [REDACTED]' },
    });
    expect(report.probes[1]!.ok).toBe(true);
    expect(metrics.sum('ProbeFailed', { Probe: PROBES.institutionCredential })).toBe(1);
    expect(metrics.sum('ProbeFailed', { Probe: PROBES.service })).toBe(0);
    expect(
      logger
        .entries()
        .filter((e) => e.level === 'warn')
        .map((e) => e.probe),
    ).toEqual([PROBES.institutionCredential]);
    expect(JSON.stringify(report) + logger.lines.join('\n')).not.toContain(CANARY);
  });

  it('treats a probe that throws synchronously like one that rejects', async () => {
    const report = await checkHealth({ clock: new ManualClock() }, [
      probe('sync-throw', () => {
        throw new TypeError('boom');
      }),
    ]);
    expect(report.probes[0]).toMatchObject({ ok: false, error: { name: 'TypeError', message: 'boom' } });
  });

  it('fails a probe that does not answer in time, without waiting for it', async () => {
    const clock = new ManualClock();
    const hung = deferred<string>();
    let settled = false;
    const running = checkHealth({ clock, probeTimeoutMs: 2000 }, [
      probe(PROBES.service, () => hung.promise),
      probe('quick', async () => 'ok'),
    ]).finally(() => (settled = true));
    const flush = () => new Promise((resolve) => setImmediate(resolve));
    await flush();
    clock.advance(1999);
    await flush();
    expect(settled).toBe(false);
    clock.advance(1);
    const report = await running;

    expect(report.probes[0]).toEqual({
      name: PROBES.service,
      ok: false,
      durationMs: 2000,
      error: { name: ProbeTimeoutError.name, code: 'probe_timeout', message: `probe ${PROBES.service} did not answer within 2000 ms` },
    });
    expect(report.probes[1]).toMatchObject({ ok: true, durationMs: 0 });
  });

  it('runs the probes concurrently', async () => {
    const started: string[] = [];
    const gate = deferred<void>();
    const gated = (name: string) =>
      probe(name, async () => {
        started.push(name);
        await gate.promise;
      });
    const running = checkHealth({ clock: new ManualClock() }, [gated('a'), gated('b')]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual(['a', 'b']);
    gate.resolve();
    expect((await running).ok).toBe(true);
  });

  it('refuses two probes of the same name', async () => {
    await expect(
      checkHealth({ clock: new ManualClock() }, [probe('x', async () => 'a'), probe('x', async () => 'b')]),
    ).rejects.toMatchObject({ code: 'probe_duplicate' });
  });
});
