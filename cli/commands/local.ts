import { readdir, rm, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { Command } from 'commander';
import { duration } from '../args';
import { CliError, UsageError } from '../errors';
import { ExitCode } from '../exit-codes';
import { iso } from '../format';
import { STATE_FILES } from '../local/state-dir';
import type * as LocalWorldModule from '../local/local-world';
import type { CommandHost } from './host';
import { lazy } from '../lazy';
import type * as ExportRun from './export-run';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use (cli/lazy.ts)
const run = lazy(() => require('./export-run') as typeof ExportRun);
const exportsDir = (stateDir: string) => run().exportsDirOf(stateDir);
// eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use (cli/lazy.ts)
const localWorld = lazy(() => require('../local/local-world') as typeof LocalWorldModule);
import { revokedKeys, type RevokedKey } from './keys';

/** `advance-clock` moves at most this far without --force: a rotation period (30 days) and a day. */
export const MAX_CLOCK_JUMP_DAYS = 31;

export interface LocalStatus {
  stateDir: string;
  createdAt: string;
  now: string;
  clockOffsetMs: number;
  baseUrl: string;
  companies: number;
  users: number;
  pendingRevocations: number;
  exportsDir: string;
  revocationGraceMinutes: number;
  rotationDays: number;
}

export function localCommand(host: CommandHost): Command {
  const local = new Command('local').description('The local embedded mode: its state directory and its clock.');

  local
    .command('status')
    .description('Where the local state is, what it holds, and what time its clock says.')
    .action(
      host.run(async (session) => {
        const status = await session.local(async (world): Promise<LocalStatus> => {
          let companies = 0;
          for await (const _ of world.directory.list()) companies++;
          let pending = 0;
          for await (const _ of world.revocations.pending()) pending++;
          const users = (await world.tokens.list({ limit: 1000, cursor: null })).items.length;
          return {
            stateDir: world.stateDir,
            createdAt: world.state.createdAt,
            now: iso(world.clock.now())!,
            clockOffsetMs: world.clock.offsetMs,
            baseUrl: '(embedded sandbox, started per command on 127.0.0.1)',
            companies,
            users,
            pendingRevocations: pending,
            exportsDir: exportsDir(world.stateDir),
            revocationGraceMinutes: world.state.revocationGraceMinutes,
            rotationDays: world.state.rotationDays,
          };
        });
        session.out.result(status, () => {
          session.out.line(`Local state   ${status.stateDir} (created ${status.createdAt})`);
          session.out.line(`Clock         ${status.now} (system clock ${status.clockOffsetMs >= 0 ? '+' : ''}${Math.round(status.clockOffsetMs / 60_000)} min)`);
          session.out.line(`Companies     ${status.companies} with a key secret (rotation every ${status.rotationDays} days, grace ${status.revocationGraceMinutes} min)`);
          session.out.line(`Users         ${status.users} held`);
          session.out.line(`Revocations   ${status.pendingRevocations} pending`);
          session.out.line(`Exports       ${status.exportsDir}`);
        });
      }),
    );

  local
    .command('advance-clock')
    .description("Move the local clock forward (rehearse a grace period or a token's expiry), then run what fell due.")
    .requiredOption('--by <duration>', `how far, e.g. 31m, 2h, 1d (at most ${MAX_CLOCK_JUMP_DAYS}d without --force)`, duration)
    .option('--force', `allow a jump of more than ${MAX_CLOCK_JUMP_DAYS} days`)
    .action(
      host.run(async (session, opts: { by: number; force?: boolean }) => {
        if (opts.by > MAX_CLOCK_JUMP_DAYS * 86_400_000 && opts.force !== true) {
          throw new UsageError(
            `--by is more than ${MAX_CLOCK_JUMP_DAYS} days: tokens, keys and rotations would all jump that far, and the service's data stays behind`,
            `add --force if that is what you mean; \`acctops local reset-clock\` brings the clock back`,
          );
        }
        const result = await session.local(async (world): Promise<{ now: string; revoked: RevokedKey[] }> => {
          world.clock.advance(opts.by);
          return { now: iso(world.clock.now())!, revoked: revokedKeys(await world.runDueRevocations()) };
        });
        session.out.result(result, () => {
          session.out.line(`Local clock is now ${result.now}.`);
          for (const r of result.revoked) session.out.line(`Old key ${r.keyPrefix}… past its grace period: ${r.outcome}.`);
        });
      }),
    );

  local
    .command('reset-clock')
    .description('Put the local clock back on the system clock (undo advance-clock).')
    .action(
      host.run(async (session) => {
        const result = await session.local(async (world) => {
          const undoneMs = world.clock.offsetMs;
          world.clock.advance(-undoneMs);
          return { now: iso(world.clock.now())!, undoneMs };
        });
        session.out.result(result, () => {
          session.out.line(`Local clock is back on the system clock: ${result.now} (moved ${Math.round(result.undoneMs / 60_000)} min back).`);
          if (result.undoneMs > 0) session.out.line('Tokens issued and rotations done while it was ahead keep their later times: they look newer than they are until the clock catches up.');
        });
      }),
    );

  local
    .command('repair')
    .description('Set aside the damaged state files that can be rebuilt (state.json, tokens.json, revocations.json) and rebuild them.')
    .action(
      host.run(async (session) => {
        const report = await localWorld().repairStateDir(session.stateDir, session.runtime.env);
        // What is left is the state directory's problem, as when a command meets it: configuration.
        if (report.unrepairable.length > 0) session.exitCode = ExitCode.config;
        session.out.result(report, () => {
          if (report.repaired.length === 0 && report.unrepairable.length === 0) session.out.line(`No damaged state file in ${session.stateDir}.`);
          for (const r of report.repaired) session.out.line(`Rebuilt ${r.file} (${r.rebuiltAs}); the damaged file is kept as ${r.keptAs}.`);
          for (const u of report.unrepairable) session.out.line(`Cannot rebuild ${u.file}: ${u.remedy}`);
        });
      }),
    );

  local
    .command('reset')
    .description('Delete the local state (embedded service, secrets, tokens, exports): the next command starts from scratch.')
    .option('--yes', 'confirm: the state directory is deleted')
    .action(
      host.run(async (session, opts: { yes?: boolean }) => {
        if (opts.yes !== true) throw new UsageError('local reset deletes the state directory and needs --yes', `acctops local reset --yes   (state directory: ${session.stateDir})`);
        const removed = await resetStateDir(session.stateDir);
        session.out.result({ stateDir: session.stateDir, removed }, () =>
          session.out.line(removed ? `Deleted the local state in ${session.stateDir}.` : `No local state in ${session.stateDir}; nothing to delete.`),
        );
      }),
    );
  return local;
}

/**
 * Deletes a state directory, but only one that is recognisably acctops's (it has state.json, or
 * nothing but acctops's files): `--state-dir` might name the wrong directory.
 */
export async function resetStateDir(stateDir: string): Promise<boolean> {
  let entries: string[];
  try {
    entries = await readdir(stateDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
  const ours = new Set<string>([...Object.values(STATE_FILES), basename(exportsDir(stateDir)), '.acctops-tmp']);
  const known = entries.every((e) => ours.has(e) || /\.tmp$/.test(e) || /\.damaged-[0-9TZ-]+$/.test(e));
  if (!entries.includes(STATE_FILES.state) && !known) {
    throw new CliError(`${stateDir} does not look like an acctops state directory; nothing deleted`, {
      code: 'not_a_state_dir',
      exitCode: ExitCode.config,
      hint: 'check --state-dir',
    });
  }
  if ((await stat(stateDir)).isDirectory()) await rm(stateDir, { recursive: true, force: true });
  return entries.length > 0;
}
