import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  ACCTOPS_BIN,
  cliEnv,
  closeCliState,
  onboardArgs,
  parseJson,
  runAcctops,
  tempStateDir,
  type CliResult,
  serviceKeysOf,
} from '../helpers/cli';

/** Holds back one request of the embedded peers, so that a signal lands while the command waits on it. */
const HOLD_PRELOAD = resolve(__dirname, '..', 'helpers', 'hold-request-preload.cjs');
/** Marks the moment the binary received a signal, so that a second one is sent only once the first is being handled. */
const SIGNAL_MARKER_PRELOAD = resolve(__dirname, '..', 'helpers', 'signal-marker-preload.cjs');

interface Hold {
  method: string;
  /** A substring of the URL (the sandbox's routes). */
  path?: string;
  /** X-Amz-Target (the Secrets Manager emulator's operations). */
  target?: string;
  delayMs: number;
}

interface ServiceKey {
  name: string;
  prefix: string;
  revokedAt: string | null;
}

/**
 * Ctrl-C and SIGTERM during local commands that leave something behind at the service or in the
 * state directory when they stop half-way (the real binary, a local state): `keys rotate` rolls its
 * rotation back, or names the command that does; `tokens refresh` releases the leases it holds; no
 * temporary file of an atomic write is left. The signal lands while the command waits on a request
 * of its embedded peers that the test holds back (HOLD_PRELOAD), so that where it lands is known.
 */
describe('acctops: interrupted local commands', () => {
  let state: { dir: string; remove(): Promise<void> };
  const outputs: CliResult[] = [];
  let companyId: string;
  let users: { externalId: string; username: string; email: string }[];
  /** Every acctops process a test started, killed at the end whatever happened. */
  const running: ChildProcess[] = [];

  const acctops = async (...args: string[]) => {
    const result = await runAcctops(['--state-dir', state.dir, ...args]);
    outputs.push(result);
    return result;
  };
  const json = async <T = Record<string, unknown>>(...args: string[]) => {
    const result = await acctops('--json', ...args);
    return { result, body: parseJson<T>(result) };
  };

  /**
   * Starts `acctops --state-dir … args` with `hold` in place and resolves once the held request has
   * arrived, with the running process. `command` is how it is started: node and the bin shim (as
   * `npx acctops` runs it), or the shim itself (`./bin/acctops.cjs`, a `node_modules/.bin/acctops` link).
   */
  async function held(
    args: string[],
    hold: Hold,
    command: { file: string; args: string[] } = { file: process.execPath, args: [ACCTOPS_BIN] },
    signalMarker?: string,
  ): Promise<{ child: ChildProcess; output: { stdout: string; stderr: string }; exited: Promise<number | null> }> {
    const marker = join(state.dir, '..', `${Date.now()}-${Math.random().toString(16).slice(2)}.held`);
    const preloads =
      signalMarker === undefined ? `--require ${HOLD_PRELOAD}` : `--require ${HOLD_PRELOAD} --require ${SIGNAL_MARKER_PRELOAD}`;
    const child = spawn(command.file, [...command.args, '--state-dir', state.dir, ...args], {
      env: cliEnv({
        NODE_OPTIONS: preloads,
        ACCTOPS_TEST_HOLD: JSON.stringify({ ...hold, marker }),
        ACCTOPS_TEST_SIGNAL_MARKER: signalMarker,
      }),
    });
    running.push(child);
    const output = { stdout: '', stderr: '' };
    child.stdout.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolvePromise) => child.once('exit', (code) => resolvePromise(code)));
    try {
      await appeared(marker, child, output, 'the held request never came');
      return { child, output, exited };
    } catch (error) {
      child.kill('SIGKILL');
      throw error;
    } finally {
      await rm(marker, { force: true });
    }
  }

  /** As `held`, then sends `signal` and resolves with how the process ended (its pid too). */
  async function interrupted(
    args: string[],
    hold: Hold,
    signal: NodeJS.Signals,
    command?: { file: string; args: string[] },
  ): Promise<CliResult & { afterSignalMs: number; pid: number }> {
    const { child, output, exited } = await held(args, hold, command);
    try {
      const signalled = Date.now();
      child.kill(signal);
      const code = await exited;
      const result = { code: code ?? -1, ...output, afterSignalMs: Date.now() - signalled, pid: child.pid! };
      outputs.push(result);
      return result;
    } finally {
      child.kill('SIGKILL');
    }
  }

  /** The company's keys as the service holds them (the sandbox's admin API, in a world of this process). */
  async function serviceKeys(): Promise<ServiceKey[]> {
    return serviceKeysOf(state.dir, companyId);
  }
  /** The key a rotation created for its version (KeyRotation names it after the version). */
  const keyOfRotation = async (versionId: string) => (await serviceKeys()).filter((k) => k.name === `acctops-rotation-${versionId}`);
  /**
   * Live keys a rotation created that nothing holds: neither the current key nor an old one waiting
   * for its revocation. What an interrupted rotation left at the service.
   */
  const orphans = async () => {
    const { body } = await json<{ companies: { keyPrefix: string; pendingRevocations: { keyPrefix: string }[] }[] }>(
      'keys',
      'status',
      '--company',
      companyId,
    );
    const held = new Set([body.companies[0]!.keyPrefix, ...body.companies[0]!.pendingRevocations.map((r) => r.keyPrefix)]);
    return (await serviceKeys()).filter((k) => k.name.startsWith('acctops-rotation-') && k.revokedAt === null && !held.has(k.prefix));
  };
  const temporaries = async () => (await readdir(state.dir)).filter((name) => name.endsWith('.tmp'));
  const rotationFindings = async () => {
    const { body } = await json<{ rotations: { findings: { type: string; versionId: string | null; repaired: boolean }[] } }>('doctor');
    return body.rotations.findings;
  };
  const rotating = async () =>
    (await json<{ companies: { rotationInProgress: boolean }[] }>('keys', 'status', '--company', companyId)).body.companies[0]!
      .rotationInProgress;

  const putSecretValue = (delayMs: number): Hold => ({ method: 'POST', target: 'secretsmanager.PutSecretValue', delayMs });

  beforeAll(async () => {
    state = await tempStateDir();
    const { body } = await json<{ companies: { companyId: string }[] }>('keys', 'status');
    companyId = body.companies[0]!.companyId;
    users = (JSON.parse(await readFile(join(state.dir, 'sandbox.json'), 'utf8')) as { demo: { users: typeof users } }).demo.users;
  });
  // A test that failed half-way must not leave the next one a pending rotation (the command works: it is tested below).
  afterEach(() => acctops('keys', 'cancel-rotation', '--company', companyId));
  afterAll(async () => {
    for (const child of running) child.kill('SIGKILL');
    await closeCliState(state, outputs);
  });

  it('Ctrl-C once the rotation created its key: rolled back (that key revoked, nothing pending), one line, and keys rotate works at once', async () => {
    // PutSecretValue is the call after the key's creation: held shorter than the wait for a step under way, so the step ends and the rollback runs.
    const run = await interrupted(['keys', 'rotate', '--company', companyId], putSecretValue(1_000), 'SIGINT');
    expect(run.code).toBe(130);
    expect(run.stdout).toBe('');
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    const line = new RegExp(
      `^acctops: error: interrupted \\(SIGINT\\): the rotation of company ${companyId} was stopped and rolled back \\(the key it created, (sbx_\\w+)…, is revoked\\); AWSCURRENT is unchanged \\(\`acctops keys rotate --company ${companyId}\` rotates now\\)$`,
    ).exec(lines[0]!);
    expect(line).not.toBeNull();

    const created = (await serviceKeys()).filter((k) => k.prefix === line![1]);
    expect(created).toEqual([
      expect.objectContaining({ name: expect.stringMatching(/^acctops-rotation-/), revokedAt: expect.any(String) }),
    ]);
    expect(await orphans()).toEqual([]);
    expect(await rotating()).toBe(false);
    expect(await rotationFindings()).toEqual([]);
    expect(await temporaries()).toEqual([]);

    const again = await json<{ state: string }>('keys', 'rotate', '--company', companyId);
    expect(again.result.code).toBe(0);
    expect(again.body.state).toBe('completed');
  });

  it('SIGTERM while a step hangs: exit 143 within the bound, one line naming keys cancel-rotation, which rolls it back; doctor reports it until then', async () => {
    const run = await interrupted(['keys', 'rotate', '--company', companyId], putSecretValue(60_000), 'SIGTERM');
    expect(run.code).toBe(143);
    expect(run.afterSignalMs).toBeLessThan(9_000);
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    const line = new RegExp(
      `^acctops: error: interrupted \\(SIGTERM\\): the rotation of company ${companyId} was stopped but could not be rolled back in time: version ([0-9a-f-]{36}) stays AWSPENDING .*\\(\`(acctops keys cancel-rotation --company ${companyId})\` rolls it back now`,
    ).exec(lines[0]!);
    expect(line).not.toBeNull();
    const [, versionId, command] = line!;

    // The key the hung step created is live and stored nowhere: the service's only record of it.
    const orphan = await keyOfRotation(versionId!);
    expect(orphan).toEqual([expect.objectContaining({ revokedAt: null })]);
    expect(await orphans()).toEqual(orphan);
    expect(await rotating()).toBe(true);
    // Not "0 findings" while nothing runs it: the doctor holds the state lock, so the rotation is abandoned.
    expect(await rotationFindings()).toEqual([expect.objectContaining({ type: 'stuck_pending', versionId, repaired: false })]);
    const refused = await acctops('keys', 'rotate', '--company', companyId);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`\`acctops keys cancel-rotation --company ${companyId}\``);

    // The command the line names, as printed.
    const cancelled = await json<{ result: string; versionId: string; revokedKeyPrefixes: string[] }>(...command!.split(' ').slice(1));
    expect(cancelled.result.code).toBe(0);
    expect(cancelled.body).toEqual(expect.objectContaining({ result: 'rolled_back', versionId, revokedKeyPrefixes: [orphan[0]!.prefix] }));
    expect(await keyOfRotation(versionId!)).toEqual([expect.objectContaining({ revokedAt: expect.any(String) })]);
    expect(await orphans()).toEqual([]);
    expect(await rotating()).toBe(false);
    expect(await rotationFindings()).toEqual([]);
    expect(await temporaries()).toEqual([]);

    expect((await json<{ result: string }>(...command!.split(' ').slice(1))).body.result).toBe('nothing_pending');
    const again = await json<{ state: string }>('keys', 'rotate', '--company', companyId);
    expect(again.result.code).toBe(0);
    expect(again.body.state).toBe('completed');
  });

  it('doctor --repair rolls back an abandoned rotation at once, where the deployed doctor waits an hour', async () => {
    const run = await interrupted(['keys', 'rotate', '--company', companyId], putSecretValue(60_000), 'SIGINT');
    expect(run.code).toBe(130);
    const repaired = await json<{ rotations: { findings: { type: string; repaired: boolean; detail: string }[] } }>('doctor', '--repair');
    expect(repaired.body.rotations.findings).toEqual([
      expect.objectContaining({
        type: 'stuck_pending',
        repaired: true,
        detail: expect.stringMatching(/rolled back, the key it created \(sbx_\w+…\) revoked$/),
      }),
    ]);
    expect(await orphans()).toEqual([]);
    expect(await rotating()).toBe(false);
  });

  /** Resolves once `path` exists (the preloads' markers), or fails when the process ended first. */
  async function appeared(path: string, child: ChildProcess, output: { stderr: string }, what = `${path} never appeared`): Promise<void> {
    for (const deadline = Date.now() + 30_000; ;) {
      if (
        await stat(path).then(
          () => true,
          () => false,
        )
      )
        return;
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${what} (exit ${child.exitCode}): ${output.stderr}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it.each([
    ['SIGINT', 'SIGINT', 130, false],
    ['SIGINT', 'SIGTERM', 143, true],
  ] as const)(
    'a second signal while the first rolls the rotation back (%s, then %s): exit %i at once with one line, the lock released, the state as before the command (--json: %s)',
    async (first, second, code, asJson) => {
      const signalled = join(state.dir, '..', `${Date.now()}-${Math.random().toString(16).slice(2)}.signalled`);
      // The step under way is held far longer than the first signal's wait for it (3 s): the second lands during that wait.
      const { child, output, exited } = await held(
        [...(asJson ? ['--json'] : []), 'keys', 'rotate', '--company', companyId],
        putSecretValue(60_000),
        undefined,
        signalled,
      );
      try {
        child.kill(first);
        await appeared(signalled, child, output);
        child.kill(second);
        expect(await exited).toBe(code);
      } finally {
        child.kill('SIGKILL');
        await rm(signalled, { force: true });
      }
      outputs.push({ code, ...output });
      expect(output.stdout).toBe('');
      const message = `stopped at once by a second signal (${second}${first === second ? '' : ` after ${first}`}), before the clean-up after the first had finished: the local state was not saved: the next command finds the service, the keys and the clock as the last save left them (tokens.json and revocations.json keep what it wrote as it went); the state lock was released`;
      if (asJson) {
        expect(
          output.stderr
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l) as unknown),
        ).toEqual([{ error: { exitCode: code, code: 'interrupted_forced', message, hint: null } }]);
      } else {
        expect(output.stderr).toBe(`acctops: error: ${message}\n`);
      }
      expect((await readdir(state.dir)).filter((name) => name === 'lock' || name.startsWith('lock.'))).toEqual([]);
      expect(await temporaries()).toEqual([]);
      // Nothing of the rotation was saved: no version pending, no key of it at the service, and the
      // next command finds no lock to take over (no note).
      const status = await json<{ companies: { rotationInProgress: boolean }[] }>('keys', 'status', '--company', companyId);
      expect(status.result.stderr).toBe('');
      expect(status.body.companies[0]!.rotationInProgress).toBe(false);
      expect(await orphans()).toEqual([]);
    },
  );

  describe('tokens refresh --all', () => {
    const refreshRoute: Hold = { method: 'POST', path: '/institution/users/token/refresh/', delayMs: 60_000 };
    const due = async () => {
      // Past every access token's expiry: every user is due, and expired.
      expect((await acctops('local', 'advance-clock', '--by', '40m')).code).toBe(0);
    };

    beforeAll(async () => {
      for (const user of users) expect((await acctops(...onboardArgs(user))).code).toBe(0);
    });

    it('Ctrl-C mid-refresh releases the leases it held: an immediate re-run refreshes every user, none busy', async () => {
      await due();
      const run = await interrupted(['tokens', 'refresh', '--all'], refreshRoute, 'SIGINT');
      expect(run.code).toBe(130);
      const lines = run.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      // The refreshes under way never get their answer (held for a minute): none ends, every one started had its lease released.
      const released = new RegExp(
        `^acctops: error: interrupted \\(SIGINT\\) after 0 of ${users.length} user\\(s\\) were handled; the other ${users.length} are not refreshed and still due; the lease\\(s\\) it held on (\\d+) user\\(s\\) whose refresh had not ended were released: (.*) \\(`,
      ).exec(lines[0]!);
      expect(released).not.toBeNull();
      expect(Number(released![1])).toBeGreaterThan(0);
      // The report of what was done is printed too: nothing (not "no user was due": they were).
      expect(run.stdout).toMatch(/^ {2}none handled\n0 user\(s\) handled\.\n$/);
      expect(await temporaries()).toEqual([]);

      const again = await json<{ outcomes: { externalId: string; result: string }[] }>('tokens', 'refresh', '--all');
      expect(again.result.code).toBe(0);
      expect(again.body.outcomes.map((o) => o.externalId).sort()).toEqual(users.map((u) => u.externalId).sort());
      for (const o of again.body.outcomes) expect(['refreshed', 'recovered']).toContain(o.result);
      const now = Date.parse((await json<{ now: string }>('local', 'status')).body.now);
      for (const u of (await json<{ users: { accessTokenExpiresAt: string }[] }>('users', 'list')).body.users) {
        expect(Date.parse(u.accessTokenExpiresAt)).toBeGreaterThan(now);
      }
    });

    it('Ctrl-C while the refreshes under way end: they complete and are saved, --json prints what was done and the line says how many of how many', async () => {
      await due();
      // Held a second, less than the interrupt's wait for the refreshes under way (3 s): every user had started (10 at once), and each ends.
      const run = await interrupted(['--json', 'tokens', 'refresh', '--all'], { ...refreshRoute, delayMs: 1_000 }, 'SIGINT');
      expect(run.code).toBe(130);
      const report = JSON.parse(run.stdout) as { mode: string; planned: number; outcomes: { externalId: string; result: string }[] };
      expect(report.mode).toBe('local');
      expect(report.planned).toBe(users.length);
      expect(report.outcomes.map((o) => o.externalId).sort()).toEqual(users.map((u) => u.externalId).sort());
      for (const o of report.outcomes) expect(['refreshed', 'recovered']).toContain(o.result);
      const lines = run.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0]!)).toEqual({
        error: {
          exitCode: 130,
          code: 'interrupted',
          message: expect.stringMatching(
            new RegExp(
              `^interrupted \\(SIGINT\\) after ${users.length} of ${users.length} user\\(s\\) were handled \\((refreshed|recovered) \\d+(, (refreshed|recovered) \\d+)?\\); none is left$`,
            ),
          ) as unknown,
          hint: '`acctops users list` shows where each user stands',
        },
      });
      // Saved: nobody is due any more, and no lease is left.
      const again = await json<{ outcomes: unknown[] }>('tokens', 'refresh', '--all');
      expect(again.result.code).toBe(0);
      expect(again.result.stderr).toBe('');
      expect(again.body.outcomes).toEqual([]);
    });

    /** The live leases in tokens.json, by user, with the pid their owner id names. */
    const leases = async () => {
      // Read from the files, not by a command: a command needs the state lock, which a held refresh holds.
      const { clockOffsetMs } = JSON.parse(await readFile(join(state.dir, 'state.json'), 'utf8')) as { clockOffsetMs: number };
      const now = Date.now() + clockOffsetMs;
      const { records } = JSON.parse(await readFile(join(state.dir, 'tokens.json'), 'utf8')) as {
        records: Record<string, { leaseOwner?: string; leaseUntil?: number }>;
      };
      return Object.entries(records)
        .filter(([, r]) => r.leaseOwner !== undefined && r.leaseUntil !== undefined && r.leaseUntil > now)
        .map(([externalId, r]) => ({ externalId, pid: Number(/^acctops-cli@[^/]+\/(\d+)\//.exec(r.leaseOwner!)?.[1]) }));
    };
    const lockNote = (pid: number) =>
      `acctops: note: took over the state lock left by acctops process ${pid}, which no longer runs (killed, or crashed): what it had not saved when it stopped is lost (the service, the keys and the clock are as its last save left them); \`acctops doctor\` checks what it may have left half done\n`;
    const reclaimedNote = (count: number, pid: number) =>
      `acctops: note: released the token lease(s) on ${count} user(s) left by acctops process ${pid}, which no longer runs (killed or crashed while holding them); those users are not busy any more\n`;

    it('leases left by a refresh killed with kill -9 are taken back by the next command: one note with the count, every user refreshed, exit 0', async () => {
      await due();
      const killed = await interrupted(['tokens', 'refresh', '--all'], refreshRoute, 'SIGKILL');
      expect(killed.code).toBe(-1);
      // The leases name the process that took them, which is gone.
      const left = await leases();
      expect(left.length).toBeGreaterThan(0);
      expect(left.every((l) => l.pid === killed.pid)).toBe(true);

      const again = await json<{ outcomes: { externalId: string; result: string; leaseUntil: string | null }[] }>(
        'tokens',
        'refresh',
        '--all',
      );
      expect(again.result.code).toBe(0);
      expect(again.result.stderr).toBe(`${lockNote(killed.pid)}${reclaimedNote(left.length, killed.pid)}`);
      expect(again.body.outcomes.map((o) => o.externalId).sort()).toEqual(users.map((u) => u.externalId).sort());
      for (const o of again.body.outcomes) expect(['refreshed', 'recovered']).toContain(o.result);
      expect(await leases()).toEqual([]);
      // Said once: the next command finds nothing to take back.
      expect((await acctops('users', 'list')).stderr).toBe('');
      expect((await acctops('tokens', 'refresh', '--all')).stderr).toBe('');
    });

    it('a lease whose holder still runs is kept, even with the state lock deleted by hand: busy, exit 5, a line per user with the lease end; taken back once that holder is killed', async () => {
      await due();
      const holder = await held(['tokens', 'refresh', '--all'], refreshRoute);
      let mine: { externalId: string; pid: number }[] = [];
      for (const deadline = Date.now() + 20_000; mine.length < users.length && Date.now() < deadline;) {
        await new Promise((r) => setTimeout(r, 50));
        mine = (await leases()).filter((l) => l.pid === holder.child.pid);
      }
      expect(mine).toHaveLength(users.length);
      // The way out README names for a lock wrongly held, taken while the holder runs: its leases still protect its users.
      await rm(join(state.dir, 'lock'));

      const busy = await json<{ outcomes: { externalId: string; result: string; leaseUntil: string | null }[] }>(
        'tokens',
        'refresh',
        '--all',
      );
      expect(busy.result.code).toBe(5);
      expect(busy.result.stderr).not.toContain('released the token lease');
      expect(busy.body.outcomes.map((o) => [o.externalId, o.result]).sort()).toEqual(users.map((u) => [u.externalId, 'busy']).sort());
      for (const o of busy.body.outcomes) {
        expect(o.leaseUntil).toMatch(/Z$/);
        expect(busy.result.stderr).toContain(`"externalId":"${o.externalId}"`);
      }
      const text = await acctops('tokens', 'refresh', '--all');
      expect(text.code).toBe(5);
      for (const u of users) {
        expect(text.stderr).toMatch(
          new RegExp(`^acctops: error: user ${u.externalId}: not refreshed: another run holds its lease until \\S+Z \\(`, 'm'),
        );
      }
      expect(await leases()).toEqual(mine);

      holder.child.kill('SIGKILL');
      await holder.exited;
      const after = await json<{ outcomes: { result: string }[] }>('tokens', 'refresh', '--all');
      expect(after.result.code).toBe(0);
      expect(after.result.stderr).toBe(reclaimedNote(users.length, holder.child.pid!));
      expect(after.body.outcomes.map((o) => o.result).filter((r) => r === 'busy')).toEqual([]);
    });
  });

  it('Ctrl-C mid-export: the --out directories it created are removed, a directory that was there and its file kept', async () => {
    const parent = join(state.dir, '..', `${Date.now()}-out`);
    await mkdir(parent);
    await writeFile(join(parent, 'keep.txt'), 'not the export');
    const out = join(parent, 'made', 'by', 'export');
    // Held: the categories of the first company are written by then, and its run's folders made.
    const run = await interrupted(['export', '--out', out], { method: 'GET', path: '/transactions', delayMs: 3_000 }, 'SIGINT');
    expect(run.code).toBe(130);
    expect(run.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^acctops: error: interrupted \(SIGINT\): .*nothing was published, and the --out directory it had created was removed/,
      ),
    ]);
    await expect(stat(join(parent, 'made'))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await readdir(parent)).toEqual(['keep.txt']);
    await rm(parent, { recursive: true, force: true });
  });

  it("a command removes the temporary files a killed process's atomic writes left, and nothing else", async () => {
    const left = ['tokens.json.0123456789ab.tmp', 'revocations.json.ba9876543210.tmp', 'sandbox.json.00000000ffff.tmp'];
    for (const name of left)
      await writeFile(join(state.dir, name), '{"records":{"someone":{"accessToken":"eyJ.left.behind"}}}', { mode: 0o600 });
    await writeFile(join(state.dir, 'tokens.json.backup.tmp'), 'not ours');
    // A read-only command: it writes no state file, but the temporary files are garbage, not state.
    expect((await acctops('users', 'list')).code).toBe(0);
    expect(await temporaries()).toEqual(['tokens.json.backup.tmp']);
    await rm(join(state.dir, 'tokens.json.backup.tmp'));
  });

  /**
   * `npx acctops` is npm's process, which runs acctops as a grandchild through a shell and does not
   * pass a SIGTERM on (README, "The acctops CLI"). The bin shim run itself, or the
   * `node_modules/.bin/acctops` link an installing project gets, is the acctops process.
   */
  it.each([
    ['./bin/acctops.cjs', 'SIGTERM', 143],
    ['node_modules/.bin/acctops', 'SIGINT', 130],
  ] as const)('%s receives %s itself and stops: exit %i, the rotation rolled back', async (form, signal, code) => {
    let file = ACCTOPS_BIN;
    if (form === 'node_modules/.bin/acctops') {
      const bin = join(state.dir, '..', `${Date.now()}-project`, 'node_modules', '.bin');
      await mkdir(bin, { recursive: true });
      file = join(bin, 'acctops');
      await symlink(ACCTOPS_BIN, file);
    }
    const run = await interrupted(['keys', 'rotate', '--company', companyId], putSecretValue(1_000), signal, { file, args: [] });
    expect(run.code).toBe(code);
    expect(run.stderr).toMatch(
      new RegExp(`^acctops: error: interrupted \\(${signal}\\): the rotation of company ${companyId} was stopped and rolled back`),
    );
    expect(await rotating()).toBe(false);
    if (file !== ACCTOPS_BIN) await rm(resolve(file, '..', '..', '..'), { recursive: true, force: true });
  });
});
