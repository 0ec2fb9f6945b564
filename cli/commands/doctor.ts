import { Command } from 'commander';
import { checkKeyRotations, parseCompanyKeySecret, type DoctorReport as RotationReport, type Finding } from '../../src/core/api-keys';
import type { ProbeResult } from '../../src/core/health/check-health';
import { SecretStage } from '../../src/core/ports/secrets';
import { noMetrics } from '../../src/core/shared/metrics';
import { redactString } from '../../src/core/shared/redact';
import type { UserRow } from './users';
import { listLocal } from './users';
import { iso } from '../format';
import type { LocalWorld } from '../local/local-world';
import type { CommandHost } from './host';
import type { Output } from '../output';
import { revokedKeys, type RevokedKey } from './keys';
import { lazy } from '../lazy';
import type * as ExportRun from './export-run';
import { localRegistry, registryHealth, type RegistryHealth } from './companies';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use (cli/lazy.ts)
const run = lazy(() => require('./export-run') as typeof ExportRun);

export interface Skipped {
  skipped: string;
}

export interface TokenHealth {
  total: number;
  active: number;
  /** Active users due for a refresh now (the schedule takes them on its next run). */
  due: number;
  /** Active users whose access token has expired: the schedule is behind. */
  expired: string[];
  needsAttention: string[];
  revoked: number;
}

export interface ExportHealth {
  /** The month every company should have by now. */
  expectedPeriod: string;
  companies: { companyId: string; lastPeriod?: string; generatedAt?: string; manifestUrl?: string; overdue: boolean }[];
}

export interface DoctorReport {
  mode: 'local' | 'aws';
  checkedAt: string;
  /** Secrets readable and service reachable (the check-health probes). */
  health: { probes: readonly ProbeResult[] } | Skipped;
  /** Each company key secret's current version reads and parses (local mode; in AWS the rotation check covers it). */
  companySecrets?: { companyId: string; secret: string; ok: boolean; error?: string }[];
  tokens: TokenHealth | Skipped;
  rotations: Pick<RotationReport, 'companies' | 'findings'> | Skipped;
  exports: ExportHealth | Skipped;
  /** The company registry: entries, and the ones the planner skips because they fail their schema. */
  registry?: RegistryHealth | Skipped;
  /** Old keys whose grace period had ended, revoked as the schedule would (local mode). */
  revokedKeys?: RevokedKey[];
  /** Local state files that do not parse (local mode): each with what to do. */
  damagedStateFiles?: { file: string; problem: string; remedy: string }[];
  /** One line per thing to look at; empty means healthy. */
  findings: string[];
}

export const isSkipped = (value: object): value is Skipped => 'skipped' in value;

export function tokenHealth(rows: readonly UserRow[], now: number): TokenHealth {
  const active = rows.filter((r) => r.status === 'active');
  return {
    total: rows.length,
    active: active.length,
    due: active.filter((r) => r.due).length,
    expired: active.filter((r) => Date.parse(r.accessTokenExpiresAt) <= now).map((r) => r.externalId),
    needsAttention: rows.filter((r) => r.status === 'needs_attention').map((r) => r.externalId),
    revoked: rows.filter((r) => r.status === 'revoked').length,
  };
}

export function findingsOf(report: Omit<DoctorReport, 'findings'>): string[] {
  const out: string[] = [];
  for (const d of report.damagedStateFiles ?? []) out.push(`${d.problem}: ${d.remedy}`);
  if (isSkipped(report.health)) out.push(`health probes not run: ${report.health.skipped}`);
  else for (const p of report.health.probes) if (!p.ok) out.push(`probe ${p.name} failed: ${p.error?.message ?? 'no detail'}`);
  for (const s of report.companySecrets ?? []) if (!s.ok) out.push(`company key secret ${s.secret} unreadable: ${s.error ?? ''}`);
  if (!isSkipped(report.tokens)) {
    for (const id of report.tokens.needsAttention) out.push(`user ${id} needs attention (refresh and retrieve failed): \`acctops users recover --user ${id}\``);
    for (const id of report.tokens.expired) out.push(`user ${id} has an expired access token: \`acctops tokens refresh --user ${id}\``);
  }
  if (!isSkipped(report.rotations)) {
    for (const f of report.rotations.findings) if (!f.repaired) out.push(`rotation ${f.type} for company ${f.companyId}: ${f.detail}`);
  }
  if (report.registry && !isSkipped(report.registry)) {
    for (const f of report.registry.unreadable) {
      out.push(`company registry entry ${f.key} is unreadable (${f.issues.map((i) => i.path || '(root)').join(', ')}); the monthly export skips it: docs/runbooks.md, "Add or remove a company"`);
    }
  }
  if (!isSkipped(report.exports)) {
    for (const c of report.exports.companies) {
      if (c.overdue) out.push(`company ${c.companyId} has no export of ${report.exports.expectedPeriod} (last: ${c.lastPeriod ?? 'none'}): \`acctops export --month ${report.exports.expectedPeriod} --company ${c.companyId}\``);
    }
  }
  return out;
}

/** The local mode's doctor: the same checks as the deployed check-health and rotation doctor, plus tokens and exports. */
export async function doctorLocal(world: LocalWorld, options: { repair: boolean }): Promise<DoctorReport> {
  const now = () => world.clock.now();
  // A damaged file never stops the doctor: it is a finding, and the checks that need it are skipped.
  const damagedStateFiles = world.damaged.map((d) => ({ file: d.path, problem: d.message, remedy: d.hint ?? '' }));
  const revoked = revokedKeys(await world.runDueRevocations());
  const health = await world.checkInstitution();
  const companySecrets: NonNullable<DoctorReport['companySecrets']> = [];
  for await (const entry of world.directory.list()) {
    try {
      parseCompanyKeySecret((await world.secrets.readSecret(entry.secretId, { stage: SecretStage.current })).value);
      companySecrets.push({ companyId: entry.companyId, secret: entry.name, ok: true });
    } catch (error) {
      companySecrets.push({ companyId: entry.companyId, secret: entry.name, ok: false, error: redactString(error instanceof Error ? error.message : String(error)) });
    }
  }
  const tokens = world.isDamaged('tokens') ? { skipped: 'tokens.json is damaged' } : tokenHealth((await listLocal(world.tokens, now())).rows, now());
  const rotations = await checkKeyRotations(
    { store: world.secrets, directory: world.directory, scheduler: world.revocations, clientFor: (key) => world.clientForKey(key), clock: world.clock, logger: world.logger, metrics: noMetrics },
    { graceMs: world.graceMs, repair: options.repair },
  );
  const exports = await run().exportHealth(world.exportStore, companySecrets.map((s) => s.companyId), now());
  const partial = {
    mode: 'local' as const,
    checkedAt: iso(now())!,
    health: { probes: health.probes },
    companySecrets,
    tokens,
    rotations: { companies: rotations.companies, findings: rotations.findings },
    exports,
    registry: await registryHealth(localRegistry(world.stateDir)),
    revokedKeys: revoked,
    damagedStateFiles,
  };
  return { ...partial, findings: findingsOf(partial) };
}

export function doctorCommand(host: CommandHost): Command {
  return new Command('doctor')
    .description('Check the deployment: secrets readable, service reachable, tokens due or failed, rotations overdue, last export per company.')
    .option('--repair', 'let the rotation doctor repair what is safe (stuck AWSPENDING, orphan keys, overdue revocations)')
    .action(
      host.run(async (session, opts: { repair?: boolean }) => {
        const options = { repair: opts.repair === true };
        const report = session.mode === 'aws' ? await (await host.aws(session)).doctor(options) : await session.local((world) => doctorLocal(world, options), { tolerateDamage: true });
        if (report.findings.length > 0) session.partial();
        session.out.result(report, () => renderDoctor(session.out, report));
      }),
    );
}

export function renderDoctor(out: Output, report: DoctorReport): void {
  const mark = (ok: boolean) => (ok ? 'ok  ' : 'FAIL');
  out.line(`acctops doctor (${report.mode} mode) at ${report.checkedAt}`);
  out.line('');
  out.line('Secrets and service');
  if (isSkipped(report.health)) out.line(`  skipped: ${report.health.skipped}`);
  else for (const p of report.health.probes) out.line(`  ${mark(p.ok)} ${p.name}${p.detail ? ` (${p.detail})` : ''}${p.error ? `: ${p.error.message}` : ''}`);
  for (const s of report.companySecrets ?? []) out.line(`  ${mark(s.ok)} company key secret ${s.secret}${s.error ? `: ${s.error}` : ''}`);
  out.line('');
  out.line('User tokens');
  if (isSkipped(report.tokens)) out.line(`  skipped: ${report.tokens.skipped}`);
  else {
    const t = report.tokens;
    out.line(`  ${t.total} user(s): ${t.active} active (${t.due} due now, ${t.expired.length} expired), ${t.needsAttention.length} needs_attention, ${t.revoked} revoked`);
  }
  out.line('');
  out.line('Key rotations');
  for (const r of report.revokedKeys ?? []) out.line(`  old key ${r.keyPrefix}… past its grace period: ${r.outcome}`);
  if (isSkipped(report.rotations)) out.line(`  skipped: ${report.rotations.skipped}`);
  else {
    out.line(`  ${report.rotations.companies} company(ies) checked, ${report.rotations.findings.length} finding(s)`);
    for (const f of report.rotations.findings as Finding[]) out.line(`  ${f.repaired ? 'repaired' : 'FINDING '} ${f.type} ${f.companyId}${f.keyPrefix ? ` ${f.keyPrefix}…` : ''}: ${f.detail}`);
  }
  out.line('');
  out.line('Exports');
  if (isSkipped(report.exports)) out.line(`  skipped: ${report.exports.skipped}`);
  else {
    out.table(report.exports.companies, [
      { header: 'COMPANY', value: (c) => c.companyId },
      { header: 'LAST PERIOD', value: (c) => c.lastPeriod ?? 'none' },
      { header: 'GENERATED', value: (c) => c.generatedAt },
      { header: `HAS ${report.exports.expectedPeriod}`, value: (c) => (c.overdue ? 'NO' : 'yes') },
    ]);
  }
  if (report.registry) {
    out.line('');
    out.line('Company registry');
    if (isSkipped(report.registry)) out.line(`  skipped: ${report.registry.skipped}`);
    else out.line(`  ${report.registry.companies} company(ies), ${report.registry.active} active, ${report.registry.unreadable.length} unreadable`);
  }
  out.line('');
  if (report.findings.length === 0) out.line('No findings.');
  else {
    out.line(`${report.findings.length} finding(s):`);
    for (const f of report.findings) out.line(`  - ${f}`);
  }
}
