import { ALARMED_METRICS, HEALTH_PROBES, METRIC_DIMENSIONS } from '../../../contract/metrics';
import type { Clock } from '../shared/clock';
import { AcctopsError } from '../shared/errors';
import { silentLogger, type Logger } from '../shared/logger';
import { noMetrics, type Metrics } from '../shared/metrics';
import { redactString } from '../shared/redact';

/**
 * One thing a deployment needs in order to work, checked from the inside: the institution
 * credential can be read, the service answers, and so on. A probe resolves when healthy (with an
 * optional detail that must be safe to log) and rejects otherwise.
 */
export interface HealthProbe {
  /** Stable, kebab-case: dashboards, alarms and the CLI's `doctor` refer to it. */
  readonly name: string;
  check(): Promise<string | void>;
}

/**
 * Names of the probes the check-health function runs; the CLI's doctor reuses them, and the
 * probe alarms read them from contract/metrics.ts.
 */
export const PROBES = HEALTH_PROBES;

export interface ProbeResult {
  readonly name: string;
  readonly ok: boolean;
  readonly durationMs: number;
  /** Safe detail of a healthy probe. */
  readonly detail?: string;
  /** Why a probe failed: error class, its stable code where it has one, a redacted message. */
  readonly error?: { readonly name: string; readonly code?: string; readonly message: string };
}

export interface HealthReport {
  readonly ok: boolean;
  readonly checkedAt: string;
  readonly probes: readonly ProbeResult[];
}

export interface CheckHealthDeps {
  clock: Clock;
  logger?: Logger;
  metrics?: Metrics;
  /**
   * A probe that has not answered by then fails, so that one hung dependency cannot hold the
   * whole check until the Lambda timeout.
   * @default 5000
   */
  probeTimeoutMs?: number;
}

export class ProbeTimeoutError extends AcctopsError {
  override readonly name: string = 'ProbeTimeoutError';
  constructor(probe: string, timeoutMs: number) {
    super(`probe ${probe} did not answer within ${timeoutMs} ms`, { code: 'probe_timeout' });
  }
}

/**
 * Runs every probe concurrently and reports each one. It never throws for a failing probe: an
 * unhealthy report is a result, not an error. Emits `ProbeFailed` per failed probe.
 */
export async function checkHealth(deps: CheckHealthDeps, probes: readonly HealthProbe[]): Promise<HealthReport> {
  const { clock, logger = silentLogger, metrics = noMetrics, probeTimeoutMs = 5000 } = deps;
  const names = new Set(probes.map((p) => p.name));
  if (names.size !== probes.length) throw new AcctopsError('probe names must be unique', { code: 'probe_duplicate' });

  const checkedAt = new Date(clock.now()).toISOString();
  const results = await Promise.all(probes.map((probe) => runProbe(probe, clock, probeTimeoutMs)));
  for (const result of results) {
    if (result.ok) {
      logger.debug('probe passed', { probe: result.name, durationMs: result.durationMs });
    } else {
      logger.warn('probe failed', { probe: result.name, durationMs: result.durationMs, error: result.error });
      metrics.withDimensions({ [METRIC_DIMENSIONS.probe]: result.name }).add(ALARMED_METRICS.probeFailed.name, 1);
    }
  }
  return { ok: results.every((r) => r.ok), checkedAt, probes: results };
}

async function runProbe(probe: HealthProbe, clock: Clock, timeoutMs: number): Promise<ProbeResult> {
  const started = clock.now();
  const cancel = new AbortController();
  const timeout = clock.sleep(timeoutMs, cancel.signal).then(() => {
    throw new ProbeTimeoutError(probe.name, timeoutMs);
  });
  // Once the probe has answered, the cancelled timeout's rejection means nothing.
  timeout.catch(() => undefined);
  try {
    // A probe that throws synchronously is as unhealthy as one that rejects.
    const detail = await Promise.race([Promise.resolve().then(() => probe.check()), timeout]);
    return { name: probe.name, ok: true, durationMs: clock.now() - started, ...(detail ? { detail } : {}) };
  } catch (error) {
    return { name: probe.name, ok: false, durationMs: clock.now() - started, error: describe(error) };
  } finally {
    // No timer outlives the check (a CLI would otherwise wait for it before exiting).
    cancel.abort();
  }
}

function describe(error: unknown): NonNullable<ProbeResult['error']> {
  if (error instanceof AcctopsError) return { name: error.name, code: error.code, message: redactString(error.message) };
  if (error instanceof Error) return { name: error.name, message: redactString(error.message) };
  return { name: 'Error', message: 'non-error value thrown' };
}
