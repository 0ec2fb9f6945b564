import { join, resolve } from 'node:path';
import { AuthenticationError, KeyRevokedError } from '../src/core/accounting-api';
import { parseCompanyKeySecret } from '../src/core/api-keys';
import { SecretStage } from '../src/core/ports/secrets';
import type { OnboardResult } from '../src/core/tokens/token-lifecycle';
import { renderExport } from './commands/export';
import { renderRotate } from './commands/keys';
import { renderRefresh } from './commands/tokens';
import { iso, shellQuote } from './format';
import { interruptExitCode, speak } from './interrupt';
import { withLocalWorld, type LocalWorld } from './local/local-world';
import { DEFAULT_STATE_DIR, resetStateDir } from './local/state-dir';
import { exportLocal } from './operations/export-run';
import { refreshDueLocal, rotateLocal } from './operations/local-operations';
import type { ExportReport, InterruptedWork, RefreshReport, RevokedKey, RotateReport } from './operations/operations';
import { revokedKeys } from './operations/shared';
import { Output, type CliIo } from './output';
import type { Dialect } from '../sandbox';

/**
 * `npm start`: the CLI's local mode, scripted. It opens the same state directory the CLI uses
 * (created on first run: the sandbox with its demo data, the secrets, the token store) and runs the
 * real use cases in order: onboard the demo users, one refresh cycle, one API-key rotation with
 * its grace period shown on the local clock, and last month's export of every company. A second
 * run continues from the saved state; `--reset` deletes it first.
 */

export interface DemoOptions {
  stateDir: string;
  reset: boolean;
  io: CliIo;
  env: NodeJS.ProcessEnv;
  verbose?: boolean;
  /** The embedded service's dialect for a new state; an existing state must match it (cli/local/local-world.ts). */
  dialect?: Dialect;
}

export interface KeyCheck {
  keyPrefix: string;
  role: 'previous' | 'current';
  duringGrace: string;
  afterGrace: string;
}

export interface DemoReport {
  stateDir: string;
  /** True when this run created the local state. */
  created: boolean;
  onboarded: OnboardResult[];
  refresh: RefreshReport;
  rotation: RotateReport;
  keyChecks: KeyCheck[];
  exports: ExportReport;
  exportsDir: string;
  /** How far the local clock is ahead of the system clock when the demo ends (this run's moves and earlier ones). */
  clockAheadMs: number;
  durationMs: number;
}

export async function runDemo(options: DemoOptions): Promise<DemoReport> {
  const started = Date.now();
  const out = new Output(options.io, { json: false, verbose: options.verbose === true });
  if (options.reset && (await resetStateDir(options.stateDir)).removed) out.line(`Deleted the previous demo state in ${options.stateDir}.`);

  const dialect = options.dialect === undefined ? {} : { dialect: options.dialect };
  let rotating: string | undefined;
  const onInterrupted = (signal: NodeJS.Signals, undone: InterruptedWork) =>
    speak(() => out.error(demoInterruptedLine(signal, undone, rotating)));
  return withLocalWorld(
    { stateDir: options.stateDir, logger: out.logger(), env: options.env, onInterrupted, ...dialect },
    async (world) => {
      const demo = world.sandbox.demo!;
      out.line('acctops demo: the local embedded mode, scripted (no AWS account; everything on 127.0.0.1)');
      out.line(
        `  state      ${world.stateDir} (${world.created ? 'created now' : 'continued from the last run; `npm start -- --reset` starts again'})`,
      );
      out.line(
        `  service    embedded sandbox with demo data (${demo.companies.length} companies, institution ${demo.institution.id}), ${world.state.dialect} dialect`,
      );
      out.line(`  clock      ${iso(world.clock.now())} (local clock; the demo moves it forward instead of waiting)`);
      if (world.reclaimedLeases.users.length > 0)
        out.line(
          `  leases     released on ${world.reclaimedLeases.users.length} user(s), left by acctops process ${world.reclaimedLeases.holders.join(', ')}, which no longer runs`,
        );

      if (world.seededCredentials)
        out.line(
          '  keys       made before they were random: the institution secret and demo keys follow from the public seed, so another account of this host can use them while the demo runs; `npm start -- --reset` starts again with random ones',
        );

      step(out, 1, 'Onboard the demo users (institution users: create, or retrieve when the service knows them)');
      const onboarded: OnboardResult[] = [];
      const lifecycle = world.lifecycle();
      for (const user of demo.users)
        onboarded.push(await lifecycle.onboard({ externalId: user.externalId, username: user.username, email: user.email }));
      out.table(onboarded, [
        { header: 'USER', value: (r) => demo.users.find((u) => u.externalId === r.externalId)?.username },
        { header: 'EXTERNAL ID', value: (r) => r.externalId },
        { header: 'RESULT', value: (r) => r.result },
        { header: 'STATUS', value: (r) => r.status },
        { header: 'ACCESS TOKEN EXPIRES', value: (r) => iso(r.accessTokenExpiresAt) },
      ]);

      step(out, 2, 'Twenty minutes pass on the local clock; the refresh schedule runs every 5 minutes (planner + worker)');
      const refresh = await passTime(world, 20 * 60_000);
      renderRefresh(out, refresh.refresh);

      const company = demo.companies[0]!;
      step(out, 3, `Rotate the API key of ${company.name} (Secrets Manager's four steps, against the emulator and the service)`);
      rotating = company.publicId;
      const rotation = await rotateLocal(world, company.publicId);
      renderRotate(out, rotation);
      const keyChecks = await graceDemo(world, company.publicId, out);
      out.table(keyChecks, [
        { header: 'KEY', value: (k) => `${k.keyPrefix}…` },
        { header: 'ROLE', value: (k) => k.role },
        { header: 'DURING GRACE', value: (k) => k.duringGrace },
        { header: `AFTER ${world.graceMs / 60_000 + 1} MIN`, value: (k) => k.afterGrace },
      ]);

      step(out, 4, 'Export last month for every company (JSONL.gz, CSV, Parquet; manifest written last)');
      const exports = await exportLocal(world, {});
      renderExport(out, exports);

      const exportsDir = join(world.stateDir, 'exports');
      out.line('');
      out.line('Done. Where things are:');
      out.line(`  exports       ${exportsDir}/company=<id>/period=${exports.month}/ (_manifest.json lists every file with its SHA-256)`);
      out.line(`  local state   ${world.stateDir} (tokens.json, secrets.json, sandbox.json: mode 0600, they hold credentials)`);
      // The CLI finds this state only where it looks by default; elsewhere each command must name it.
      const cli = `npx acctops${world.stateDir === resolve(DEFAULT_STATE_DIR) ? '' : ` --state-dir ${shellQuote(world.stateDir)}`}`;
      out.line(`  next          ${cli} users list | ${cli} keys status | ${cli} doctor | npx acctops --help`);
      // Otherwise only `local status` says so, and every later command shows times in the future.
      const clockAheadMs = world.clock.offsetMs;
      if (clockAheadMs > 0)
        out.line(
          `  clock         the local clock is ${Math.round(clockAheadMs / 60_000)} min ahead of the system clock (the demo moved it instead of waiting), so later commands show times in the future; \`${cli} local reset-clock\` puts it back`,
        );
      return {
        stateDir: world.stateDir,
        created: world.created,
        onboarded,
        refresh: refresh.refresh,
        rotation,
        keyChecks,
        exports,
        exportsDir,
        clockAheadMs,
        durationMs: Date.now() - started,
      };
    },
  );
}

/**
 * The demo's one line on Ctrl-C or SIGTERM (the world has undone what must not outlive it and saves
 * the state before the exit, cli/local/local-world.ts): a rotation under way is rolled back, or left
 * for `keys cancel-rotation` when its step did not end in time.
 */
function demoInterruptedLine(signal: NodeJS.Signals, undone: InterruptedWork, companyId: string | undefined) {
  const rotation = undone.rotations.at(-1);
  const rotationText =
    rotation?.state === 'rolled_back'
      ? '; the key rotation under way was rolled back'
      : rotation?.state === 'pending'
        ? `; the key rotation under way could not be rolled back in time (\`npx acctops keys cancel-rotation --company ${companyId ?? '<id>'}\` rolls it back)`
        : '';
  return {
    exitCode: interruptExitCode(signal),
    code: 'interrupted',
    message: `interrupted (${signal}): the demo was stopped${rotationText}; the local state is saved`,
    hint: '`npm start` runs the demo again from it; `npm start -- --reset` starts from scratch',
  };
}

function step(out: Output, n: number, title: string): void {
  out.line('');
  out.line(`${n}. ${title}`);
}

/**
 * Shows the grace period: the previous key (AWSPREVIOUS) and the new one both work; after the
 * grace period (the local clock moved past it) the scheduled revocation runs and only the new key works.
 */
async function graceDemo(world: LocalWorld, companyId: string, out: Output): Promise<KeyCheck[]> {
  const entry = await world.directory.find(companyId);
  const current = parseCompanyKeySecret((await world.secrets.readSecret(entry.secretId, { stage: SecretStage.current })).value);
  const previous = parseCompanyKeySecret((await world.secrets.readSecret(entry.secretId, { stage: SecretStage.previous })).value);
  const probe = async (key: typeof current): Promise<string> => {
    try {
      await world.clientForKey(key).companies.list().all();
      return 'works';
    } catch (error) {
      if (error instanceof KeyRevokedError) return 'refused (key_revoked)';
      // A service that does not say why (the minimal dialect: DRF's authentication_failed) still refused the key.
      if (error instanceof AuthenticationError) return `refused (${error.apiCode ?? error.code})`;
      throw error;
    }
  };
  const checks: KeyCheck[] = [
    { keyPrefix: previous.keyPrefix, role: 'previous', duringGrace: await probe(previous), afterGrace: '' },
    { keyPrefix: current.keyPrefix, role: 'current', duringGrace: await probe(current), afterGrace: '' },
  ];
  const passed = await passTime(world, world.graceMs + 60_000);
  for (const r of passed.revoked)
    out.line(`  grace period over: scheduled revocation of ${r.keyPrefix}… ${r.outcome}${r.error ? `: ${r.error}` : ''}`);
  const refreshed = passed.refresh.outcomes.filter((o) => o.result === 'refreshed').length;
  if (refreshed > 0) out.line(`  meanwhile the refresh schedule refreshed ${refreshed} user token(s)`);
  checks[0]!.afterGrace = await probe(previous);
  checks[1]!.afterGrace = await probe(current);
  return checks;
}

/** The schedule's period: the deployed refresh planner runs every 5 minutes (stage default). */
const TICK_MS = 5 * 60_000;

/**
 * Lets `ms` of local time pass the way a deployment lives through it: in 5-minute ticks, each one
 * running the refresh schedule (planner + worker) and the revocations that fell due, so no token
 * expires and no old key outlives its grace period just because the demo skipped ahead.
 */
async function passTime(world: LocalWorld, ms: number): Promise<{ refresh: RefreshReport; revoked: RevokedKey[] }> {
  const refresh: RefreshReport = { mode: 'local', planned: 0, outcomes: [], counts: {} };
  const revoked: RevokedKey[] = [];
  for (let left = ms; left > 0; left -= TICK_MS) {
    world.clock.advance(Math.min(TICK_MS, left));
    revoked.push(...revokedKeys(await world.runDueRevocations()));
    const tick = await refreshDueLocal(world);
    refresh.planned += tick.planned;
    refresh.outcomes.push(...tick.outcomes);
    for (const [result, n] of Object.entries(tick.counts))
      refresh.counts[result as keyof RefreshReport['counts']] = (refresh.counts[result as keyof RefreshReport['counts']] ?? 0) + n;
  }
  return { refresh, revoked };
}
