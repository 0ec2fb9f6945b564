import { Command } from 'commander';
import { isSkipped, type DoctorReport } from '../operations/operations';
import { revokedKeyRows } from '../operations/shared';
import type { Output } from '../output';
import type { CommandHost } from './host';

export function doctorCommand(host: CommandHost): Command {
  return new Command('doctor')
    .description(
      "Check the deployment: secrets readable, service reachable, tokens due or failed, rotations overdue, each company's export of the latest month due (the overdue check's deadline).",
    )
    .option('--repair', 'let the rotation doctor repair what is safe (stuck AWSPENDING, orphan keys, overdue revocations)')
    .action(
      host.run(async (session, opts: { repair?: boolean }) => {
        const options = { repair: opts.repair === true };
        const report = await (await session.operations()).doctor(options);
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
  else
    for (const p of report.health.probes)
      out.line(`  ${mark(p.ok)} ${p.name}${p.detail ? ` (${p.detail})` : ''}${p.error ? `: ${p.error.message}` : ''}`);
  for (const s of report.companySecrets ?? []) out.line(`  ${mark(s.ok)} company key secret ${s.secret}${s.error ? `: ${s.error}` : ''}`);
  out.line('');
  out.line('User tokens');
  if (isSkipped(report.tokens)) out.line(`  skipped: ${report.tokens.skipped}`);
  else {
    const t = report.tokens;
    out.line(
      `  ${t.total} user(s): ${t.active} active (${t.due} due now, ${t.expired.length} expired), ${t.needsAttention.length} needs_attention, ${t.revoked} revoked`,
    );
  }
  out.line('');
  out.line('Key rotations');
  if (report.revokedKeys != null && isSkipped(report.revokedKeys))
    out.line(`  pending revocations not checked: ${report.revokedKeys.skipped}`);
  // Locally the doctor runs the due revocations; deployed, the schedules do, and it names those that will fail.
  for (const r of revokedKeyRows(report))
    out.line(
      `  old key ${r.keyPrefix}… ${report.mode === 'local' ? 'past its grace period' : 'pending revocation'}: ${r.outcome}${r.error ? `: ${r.error}` : ''}`,
    );
  if (isSkipped(report.rotations)) out.line(`  skipped: ${report.rotations.skipped}`);
  else {
    // The check counts the key secrets it examined; a registered company without one is a finding, counted apart.
    const keyless = report.rotations.findings.filter((f) => f.type === 'key_missing').length;
    out.line(
      `  ${report.rotations.companies} company key(s) checked${keyless > 0 ? `, ${keyless} registered company(ies) without a key` : ''}, ${report.rotations.findings.length} finding(s)`,
    );
    for (const f of report.rotations.findings)
      out.line(`  ${f.repaired ? 'repaired' : 'FINDING '} ${f.type} ${f.companyId}${f.keyPrefix ? ` ${f.keyPrefix}…` : ''}: ${f.detail}`);
  }
  out.line('');
  out.line('Exports');
  if (isSkipped(report.exports)) out.line(`  skipped: ${report.exports.skipped}`);
  else {
    out.table(report.exports.companies, [
      { header: 'COMPANY', value: (c) => c.companyId },
      { header: 'LAST PERIOD', value: (c) => c.lastPeriod ?? 'none' },
      { header: 'GENERATED', value: (c) => (c.manifestError ? 'manifest unreadable' : c.generatedAt) },
      { header: `HAS ${report.exports.expectedPeriod}`, value: (c) => `${c.overdue ? 'NO' : 'yes'}${c.keyMissing ? ' (no key)' : ''}` },
      // Athena reads the symlinks, which follow the manifest: behind it when one could not be written,
      // or for a moment while a publish writes them; in line but empty when a re-export dropped Parquet.
      {
        header: 'ATHENA',
        value: (c) =>
          c.lastPeriod === null || c.manifestError
            ? ''
            : [
                ...(c.staleSymlinks.length > 0 ? [`behind (${c.staleSymlinks.map((s) => s.period).join(', ')})`] : []),
                ...(c.publishing.length > 0 ? [`publishing (${c.publishing.map((s) => s.period).join(', ')})`] : []),
                ...(c.athenaEmpty.length > 0 ? [`no rows (${c.athenaEmpty.map((s) => s.period).join(', ')})`] : []),
              ].join(', ') || 'ok',
      },
    ]);
    for (const c of report.exports.companies)
      for (const p of c.publishing)
        out.line(
          `  publishing: company ${c.companyId}, ${p.period}: its manifest was committed at ${p.committedAt}, moments ago, and the Athena symlinks of ${p.datasets.join(', ')} are not written yet; not a finding (a doctor run a minute later reports them if they stay behind)`,
        );
  }
  out.line('');
  out.line('Company registry');
  if (isSkipped(report.registry)) out.line(`  skipped: ${report.registry.skipped}`);
  else
    out.line(
      `  ${report.registry.companies} company(ies), ${report.registry.active} active, ${report.registry.unreadable.length} unreadable`,
    );
  out.line('');
  if (report.findings.length === 0) out.line('No findings.');
  else {
    out.line(`${report.findings.length} finding(s):`);
    for (const f of report.findings) out.line(`  - ${f}`);
  }
}
