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
import { companyKeySecretName, RECOVERY_WINDOW_DAYS, retireCompanyKeySecret, type SecretLifecycle } from '../../src/core/api-keys';
import { formats, guid } from '../args';
import { type CompanyKeyContext, localKeyContext } from './keys';
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

/** The AWS mode's registry (the stack's table). */
export async function awsCompanyRegistry(session: Session): Promise<CompanyRegistry> {
  return new CompanyRegistry(await awsRegistry().awsRegistryTable(session), { defaultFormats: FORMATS, logger: session.out.logger() });
}

/** The local registry of a world already open (doctorLocal runs inside `session.local`). */
export function localRegistry(stateDir: string): CompanyRegistry {
  return new CompanyRegistry(new FileRegistryTable({ path: statePath(stateDir, 'companies') }), { defaultFormats: FORMATS });
}

export function recoveryDays(raw: string): number {
  const days = Number(raw);
  if (!/^\d{1,2}$/.test(raw.trim()) || days < RECOVERY_WINDOW_DAYS.min || days > RECOVERY_WINDOW_DAYS.max) {
    throw new InvalidArgumentError(`expected whole days from ${RECOVERY_WINDOW_DAYS.min} to ${RECOVERY_WINDOW_DAYS.max}`);
  }
  return days;
}

function notRegistered(error: unknown): unknown {
  if (error instanceof CompanyNotRegisteredError) {
    return new CliError(error.message, { code: error.code, exitCode: ExitCode.config, hint: '`acctops companies list` shows the registered companies', cause: error });
  }
  return error;
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
    .description(
      'Stop exporting a company and rotating its key: the registry marks it removed, its key secret stops rotating and is scheduled for deletion ' +
        'with a recovery window (undo: `companies restore`).',
    )
    .requiredOption('--company <uuid>', "the company's publicId", guid)
    .option('--recovery-days <n>', `days the key secret stays restorable (${RECOVERY_WINDOW_DAYS.min}-${RECOVERY_WINDOW_DAYS.max})`, recoveryDays, RECOVERY_WINDOW_DAYS.default)
    .action(
      host.run(async (session, opts: { company: string; recoveryDays: number }) => {
        const work = async (registry: CompanyRegistry, now: number, secrets: () => { stage: string; lifecycle: SecretLifecycle }) => {
          const removed = await registry.remove(opts.company, now);
          const { stage, lifecycle } = secrets();
          return { ...removed, key: await retireCompanyKeySecret(lifecycle, stage, removed.company.companyId, opts.recoveryDays) };
        };
        let outcome;
        try {
          outcome =
            session.mode === 'aws'
              ? await (async () => {
                  const ops = await host.aws(session);
                  return work(await awsCompanyRegistry(session), Date.now(), () => ops.companySecrets());
                })()
              : await session.local((world) => work(localRegistry(world.stateDir), world.clock.now(), () => ({ stage: 'local', lifecycle: world.secretLifecycle() })));
        } catch (error) {
          throw notRegistered(error);
        }
        const { result, company, key } = outcome;
        const undo = `acctops companies restore --company ${company.companyId}`;
        session.out.result({ result, company: row(company), key, undo }, () => {
          session.out.line(`Company ${company.companyId}: ${result.replace('_', ' ')}; the monthly export leaves it out from the next run on.`);
          if (key.result === 'no_secret') session.out.line('  It has no key secret of this stage (an imported one stays with the stack).');
          else if (key.result === 'already_scheduled') session.out.line(`  Its key secret ${key.secret} was already scheduled for deletion (${key.deletionDate ?? 'date unknown'}).`);
          else {
            session.out.line(`  Key secret ${key.secret}: rotation ${key.rotationStopped ? 'stopped' : 'was off'}; deleted for good on ${key.deletionDate ?? `in ${key.recoveryWindowDays} days`} unless restored.`);
          }
          session.out.line(`  Undo: \`${undo}\` (registry entry and key secret; or \`aws secretsmanager restore-secret --secret-id <name>\`).`);
        });
      }),
    );

  companies
    .command('restore')
    .description("Undo `companies remove`: the registry entry is active again, its key secret restored and rotating (within the recovery window).")
    .requiredOption('--company <uuid>', "the company's publicId", guid)
    .action(
      host.run(async (session, opts: { company: string }) => {
        const work = async (registry: CompanyRegistry, now: number, ctx: () => Promise<CompanyKeyContext>) => {
          const existing = await registry.get(opts.company);
          if (!existing) throw new CompanyNotRegisteredError(opts.company.toLowerCase());
          const added = await registry.add({ companyId: existing.companyId }, now);
          const c = await ctx();
          const description = await c.lifecycle.describe(companyKeySecretName(c.target.stage, existing.companyId));
          let key: 'restored' | 'not_deleted' | 'no_secret' = 'no_secret';
          if (description?.deletedAt !== undefined) {
            await c.lifecycle.restore(description.secretArn);
            key = 'restored';
          } else if (description) key = 'not_deleted';
          if (description) {
            await c.lifecycle.enableRotation(description.secretArn, {
              lambdaArn: c.target.rotationLambdaArn,
              automaticallyAfterDays: added.company.rotationDays ?? c.defaultRotationDays,
            });
          }
          return { result: added.result, company: added.company, key, rotationDays: added.company.rotationDays ?? c.defaultRotationDays };
        };
        let outcome;
        try {
          outcome =
            session.mode === 'aws'
              ? await (async () => {
                  const ops = await host.aws(session);
                  return work(await awsCompanyRegistry(session), Date.now(), () => ops.companyKeyContext());
                })()
              : await session.local((world) => work(localRegistry(world.stateDir), world.clock.now(), () => Promise.resolve(localKeyContext(world))));
        } catch (error) {
          throw notRegistered(error);
        }
        session.out.result({ ...outcome, company: row(outcome.company) }, () => {
          session.out.line(`Company ${outcome.company.companyId}: ${outcome.result.replace('_', ' ')}.`);
          if (outcome.key === 'no_secret') session.out.line('  It has no key secret: `acctops keys install --company <id>` creates one.');
          else session.out.line(`  Key secret ${outcome.key === 'restored' ? 'restored' : 'was not deleted'}; rotation on, every ${outcome.rotationDays} days.`);
        });
      }),
    );

  return companies;
}
