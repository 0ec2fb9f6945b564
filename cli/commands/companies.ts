import { Command, InvalidArgumentError } from 'commander';
import type * as AwsRegistry from '../aws/aws-company-registry';
import { FileRegistryTable } from '../../src/adapters/local/file-company-registry';
import {
  CompanyNotRegisteredError,
  CompanyRegistry,
  ROTATION_DAYS,
  type RegisteredCompany,
  type RegistryFinding,
  type RegistryTable,
} from '../../src/core/companies/company-registry';
import { FORMATS, type ExportFormat } from '../../src/core/exports/formats/datasets';
import { formats, guid } from '../args';
import { CliError } from '../errors';
import { ExitCode } from '../exit-codes';
import { lazy } from '../lazy';
import { statePath } from '../local/state-dir';
import type { Session } from '../session';
import type { CommandHost } from './host';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- only AWS mode needs the DynamoDB client (cli/lazy.ts)
const awsRegistry = lazy(() => require('../aws/aws-company-registry') as typeof AwsRegistry);

export function rotationDays(raw: string): number {
  const days = Number(raw);
  if (!/^\d{1,4}$/.test(raw.trim()) || days < ROTATION_DAYS.min || days > ROTATION_DAYS.max) {
    throw new InvalidArgumentError(`expected whole days from ${ROTATION_DAYS.min} to ${ROTATION_DAYS.max}`);
  }
  return days;
}

export interface CompanyRow {
  companyId: string;
  status: 'active' | 'removed';
  formats: ExportFormat[];
  /** null: the stage's `apiKeys.rotationDays`. */
  rotationDays: number | null;
  addedAt: string | null;
  removedAt: string | null;
  seededFrom: string | null;
}

function row(c: RegisteredCompany): CompanyRow {
  return {
    companyId: c.companyId,
    status: c.removedAt === undefined ? 'active' : 'removed',
    formats: c.formats,
    rotationDays: c.rotationDays ?? null,
    addedAt: c.addedAt ?? null,
    removedAt: c.removedAt ?? null,
    seededFrom: c.seededFrom ?? null,
  };
}

/**
 * The registry of the session's mode: `<stateDir>/companies.json` in local mode (inside the
 * local world's lock, so two commands never write it at once), the stack's table in AWS mode.
 */
async function withRegistry<T>(session: Session, work: (registry: CompanyRegistry, now: number) => Promise<T>): Promise<T> {
  const make = (table: RegistryTable) => new CompanyRegistry(table, { defaultFormats: FORMATS, logger: session.out.logger() });
  if (session.mode === 'aws') return work(make(await awsRegistry().awsRegistryTable(session)), Date.now());
  return session.local((world) => work(make(new FileRegistryTable({ path: statePath(world.stateDir, 'companies') })), world.clock.now()));
}

const PAGE = 500;

/** What `acctops doctor` reports of the registry: how many entries, and the unreadable ones. */
export interface RegistryHealth {
  companies: number;
  active: number;
  /** Entries that fail their schema (not `skipped`: that name marks a check that did not run). */
  unreadable: RegistryFinding[];
}

/** Reads the whole registry a page at a time, keeping counts and the findings only. */
export async function registryHealth(registry: Pick<CompanyRegistry, 'pages'>): Promise<RegistryHealth> {
  const health: RegistryHealth = { companies: 0, active: 0, unreadable: [] };
  for await (const page of registry.pages(PAGE)) {
    health.companies += page.items.length;
    health.active += page.items.filter((c) => c.removedAt === undefined).length;
    health.unreadable.push(...page.skipped);
  }
  return health;
}

/** The registry's health in the session's mode, for `acctops doctor`. */
export function registryHealthOf(session: Session): Promise<RegistryHealth> {
  return withRegistry(session, (registry) => registryHealth(registry));
}

/** The local registry of a world already open (doctorLocal runs inside `session.local`). */
export function localRegistry(stateDir: string): CompanyRegistry {
  return new CompanyRegistry(new FileRegistryTable({ path: statePath(stateDir, 'companies') }), { defaultFormats: FORMATS });
}

export function companiesCommand(host: CommandHost): Command {
  const companies = new Command('companies').description('The company registry: which companies the stage exports (added and removed at run time, no deploy).');

  companies
    .command('add')
    .description('Register a company (idempotent): the monthly export includes it from the next run on.')
    .requiredOption('--company <uuid>', "the company's publicId at the service", guid)
    .option('--formats <list>', `export formats, comma-separated (${FORMATS.join(', ')}); default: all, or the registered ones`, formats)
    .option('--rotation-days <n>', "days between the company key's rotations (default: the stage's apiKeys.rotationDays)", rotationDays)
    .action(
      host.run(async (session, opts: { company: string; formats?: ExportFormat[]; rotationDays?: number }) => {
        const { result, company } = await withRegistry(session, (registry, now) =>
          registry.add({ companyId: opts.company, ...(opts.formats ? { formats: opts.formats } : {}), ...(opts.rotationDays !== undefined ? { rotationDays: opts.rotationDays } : {}) }, now),
        );
        session.out.result({ result, company: row(company) }, () => {
          session.out.line(`Company ${company.companyId}: ${result.replace('_', ' ')} (formats ${company.formats.join(', ')}).`);
          session.out.line('  The monthly export plans it from the next run on; `acctops keys install` stores its API key.');
        });
      }),
    );

  companies
    .command('list')
    .description('List the registered companies, a page at a time (removed ones too). Exit 5 if an entry is unreadable.')
    .option('--active', 'only companies that are not removed')
    .action(
      host.run(async (session, opts: { active?: boolean }) => {
        const rows: CompanyRow[] = [];
        const skipped: RegistryFinding[] = [];
        await withRegistry(session, async (registry) => {
          for await (const page of registry.pages(PAGE)) {
            rows.push(...page.items.map(row).filter((r) => !opts.active || r.status === 'active'));
            skipped.push(...page.skipped);
          }
        });
        rows.sort((a, b) => a.companyId.localeCompare(b.companyId));
        if (skipped.length > 0) session.partial();
        session.out.result({ companies: rows, skipped }, () => {
          session.out.table(rows, [
            { header: 'COMPANY', value: (r) => r.companyId },
            { header: 'STATUS', value: (r) => r.status },
            { header: 'FORMATS', value: (r) => r.formats.join(',') },
            { header: 'ROTATION DAYS', value: (r) => r.rotationDays ?? 'stage', align: 'right' },
            { header: 'ADDED', value: (r) => r.addedAt ?? (r.seededFrom ? `(${r.seededFrom})` : null) },
            { header: 'REMOVED', value: (r) => r.removedAt },
          ]);
          session.out.line(`${rows.length} company(ies).`);
          for (const f of skipped) {
            session.out.line(`  skipped an unreadable entry ${f.key}: ${f.issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`);
          }
        });
      }),
    );

  companies
    .command('remove')
    .description('Stop exporting a company: the registry marks it removed (undo: `companies add`). Its key secret is kept.')
    .requiredOption('--company <uuid>', "the company's publicId", guid)
    .action(
      host.run(async (session, opts: { company: string }) => {
        let outcome;
        try {
          outcome = await withRegistry(session, (registry, now) => registry.remove(opts.company, now));
        } catch (error) {
          if (error instanceof CompanyNotRegisteredError) {
            throw new CliError(error.message, { code: error.code, exitCode: ExitCode.config, hint: '`acctops companies list` shows the registered companies', cause: error });
          }
          throw error;
        }
        const { result, company } = outcome;
        session.out.result({ result, company: row(company) }, () => {
          session.out.line(`Company ${company.companyId}: ${result.replace('_', ' ')}; the monthly export leaves it out from the next run on.`);
          session.out.line('  Its API-key secret is kept (docs/runbooks.md, "Add or remove a company"); undo with `acctops companies add --company <id>`.');
        });
      }),
    );

  return companies;
}
