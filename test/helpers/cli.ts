import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expectNoCanaries, trackSecret } from './canary';

/** The real binary, as `npx acctops` runs it: node + the bin shim (tsx's CJS loader, no build). */
export const ACCTOPS_BIN = resolve(__dirname, '..', '..', 'bin', 'acctops.cjs');

/** The keys of every row of `keys status --json`, in both modes (README: an absent value is `null`, never a missing key). */
export const KEY_STATUS_ROW_FIELDS: readonly string[] = [
  'apiKeyId',
  'companyId',
  'currentKeyRevocations',
  'earlierKeys',
  'error',
  'expiresAt',
  'keyPrefix',
  'lastRotatedAt',
  'lastUsedAt',
  'lastUsedByThisCheck',
  'nextRotationAt',
  'pendingRevocations',
  'permissions',
  'replacedKey',
  'rotationDays',
  'rotationEnabled',
  'rotationInProgress',
  'secret',
].sort();

/** The top-level keys of `doctor --json`, in both modes (a section a mode does not check is `null`). */
export const DOCTOR_REPORT_FIELDS: readonly string[] = [
  'checkedAt',
  'companySecrets',
  'damagedStateFiles',
  'exports',
  'findings',
  'health',
  'mode',
  'registry',
  'revokedKeys',
  'rotations',
  'tokens',
];

/** `users onboard` of a user the tests know (the demo's, or their own), in acctops's arguments. */
export function onboardArgs(user: { externalId: string; username: string; email: string }): string[] {
  return ['users', 'onboard', '--external-id', user.externalId, '--username', user.username, '--email', user.email];
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * `acctops --state-dir <stateDir> …args` through runCli in this process (what the binary runs), for
 * tests that give the embedded sandbox faults or registry entries the binary would not see. Each
 * result is also pushed to `outputs`, which the caller scans for canaries.
 */
export async function runCliInProcess(stateDir: string, args: string[], outputs: CliResult[]): Promise<CliResult> {
  // Loaded here, not at the top: the suites that spawn the binary must not load the CLI's modules.
  const { runCli } = await import('../../cli/program.ts');
  let stdout = '';
  let stderr = '';
  const code = await runCli(['--state-dir', stateDir, ...args], {
    io: { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) } },
    env: cliEnv(),
    cwd: stateDir,
  });
  const result = { code, stdout, stderr };
  outputs.push(result);
  return result;
}

/**
 * A clean environment: no AWS credentials or profile of the developer's machine, no ACCTOPS_*
 * variables, the SDK kept off the instance metadata service. Tests add what they mean to set.
 */
export function cliEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TMPDIR: process.env.TMPDIR,
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_CONFIG_FILE: '/dev/null',
    AWS_SHARED_CREDENTIALS_FILE: '/dev/null',
  };
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) env[k] = v;
  return env;
}

/** Runs `node bin/acctops.cjs ...args` to completion; never rejects on a non-zero exit. */
export function runAcctops(
  args: readonly string[],
  options: { env?: Record<string, string | undefined>; cwd?: string; user?: { uid: number; gid: number } } = {},
): Promise<CliResult> {
  return new Promise((resolvePromise, reject) => {
    execFile(
      process.execPath,
      [ACCTOPS_BIN, ...args],
      { env: cliEnv(options.env), cwd: options.cwd ?? tmpdir(), maxBuffer: 16 * 1024 * 1024, timeout: 60_000, ...options.user },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== 'number') return reject(error);
        resolvePromise({ code: typeof error?.code === 'number' ? error.code : 0, stdout, stderr });
      },
    );
  });
}

/** Starts the binary and leaves it running (for `acctops sandbox`). */
export function spawnAcctops(
  args: readonly string[],
  options: { env?: Record<string, string | undefined> } = {},
): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, [ACCTOPS_BIN, ...args], { env: cliEnv(options.env), cwd: tmpdir() });
}

/**
 * What `npm run <name>` runs (package.json `scripts`), without npm and its shell: the command's
 * words, run from the package root with node_modules/.bin first on PATH, as npm runs it. Only a
 * simple command (no shell syntax), so that the process it starts is the script's own.
 */
export function npmScriptCommand(name: string): { file: string; args: string[]; cwd: string; env: { PATH: string } } {
  const root = resolve(__dirname, '..', '..');
  const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  const script = scripts[name];
  if (script === undefined || !/^[\w ./:=@-]+$/.test(script)) throw new Error(`npm script ${name} is not a simple command: ${script}`);
  const [file, ...args] = script.split(/ +/) as [string, ...string[]];
  return { file, args, cwd: root, env: { PATH: `${join(root, 'node_modules', '.bin')}:${process.env.PATH ?? ''}` } };
}

export async function tempStateDir(): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'acctops-cli-'));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * Every credential a local state directory holds (keys of every secret version, the institution
 * secret, the users' tokens, the sandbox's demo keys), registered with the canary scanner so that
 * any of them in CLI output is a leak.
 */
export async function trackStateSecrets(stateDir: string): Promise<string[]> {
  const found: string[] = [];
  const add = (value: unknown) => {
    if (typeof value === 'string' && value.length >= 8) {
      found.push(value);
      trackSecret(value);
    }
  };
  const json = async (file: string) => JSON.parse(await readFile(join(stateDir, file), 'utf8').catch(() => 'null')) as unknown;
  const secrets = (await json('secrets.json')) as { secrets: { versions: { value?: { SecretString?: string } }[] }[] } | null;
  for (const secret of secrets?.secrets ?? []) {
    for (const version of secret.versions) {
      const text = version.value?.SecretString;
      if (!text) continue;
      add(text);
      try {
        add((JSON.parse(text) as { apiKey?: string }).apiKey);
      } catch {
        add(text.slice(text.indexOf(':') + 1));
      }
    }
  }
  const sandbox = (await json('sandbox.json')) as {
    demo: { institution: { secret: string }; companies: { apiKeys: { key: string }[] }[] } | null;
  } | null;
  add(sandbox?.demo?.institution.secret);
  for (const company of sandbox?.demo?.companies ?? []) for (const key of company.apiKeys) add(key.key);
  const tokens = (await json('tokens.json')) as { records: Record<string, { accessToken: string; refreshToken: string }> } | null;
  for (const record of Object.values(tokens?.records ?? {})) {
    add(record.accessToken);
    add(record.refreshToken);
  }
  return found;
}

/** Parses a `--json` result, with the output in the failure message when it is not JSON. */
/**
 * The end of a CLI suite: every credential its state directory holds by now is a canary, none may
 * appear in anything the suite's commands printed, and then the directory goes.
 */
export async function closeCliState(state: { dir: string; remove(): Promise<void> }, outputs: readonly CliResult[]): Promise<void> {
  await trackStateSecrets(state.dir);
  expectNoCanaries(
    outputs.map((o) => `${o.stdout}\n${o.stderr}`),
    'acctops output',
  );
  await state.remove();
}

/** What every command of a {@link useCliState} suite gets, besides `--state-dir`. */
export interface CliStateOptions {
  /** Environment of every command, on top of {@link cliEnv}'s clean one. */
  env?: Record<string, string | undefined>;
  /** The working directory of every command, from the state directory (default: the system's temporary directory). */
  cwd?: (dir: string) => string;
}

/** A suite's local state directory and the binary run against it; see {@link useCliState}. */
export interface CliState {
  /** The state directory (set once the suite's first `beforeAll` ran). */
  readonly dir: string;
  /** Everything the suite's commands printed; output a test obtains another way is pushed here so that it is scanned too. */
  readonly outputs: CliResult[];
  /** `acctops --state-dir <dir> …args`, recorded in `outputs`. */
  acctops(...args: string[]): Promise<CliResult>;
  /** The same, with environment for this command on top of the suite's. */
  run(args: readonly string[], options?: { env?: Record<string, string | undefined> }): Promise<CliResult>;
}

/**
 * A temporary local state directory for the calling `describe`, and the real binary run against it.
 * Registers its own hooks: the directory is made in a `beforeAll` declared before the suite's own
 * (jest runs them in order, so a suite's setup may use it), and closed with {@link closeCliState},
 * so that every suite's output is scanned for the credentials the directory holds.
 */
export function useCliState(options: CliStateOptions = {}): CliState {
  let state: { dir: string; remove(): Promise<void> } | undefined;
  const outputs: CliResult[] = [];
  const dir = (): string => {
    if (!state) throw new Error('useCliState: the state directory is made in beforeAll; use it inside a hook or a test');
    return state.dir;
  };
  const run = async (args: readonly string[], extra: { env?: Record<string, string | undefined> } = {}): Promise<CliResult> => {
    const result = await runAcctops(['--state-dir', dir(), ...args], {
      env: { ...options.env, ...extra.env },
      cwd: options.cwd?.(dir()),
    });
    outputs.push(result);
    return result;
  };
  beforeAll(async () => {
    state = await tempStateDir();
  });
  afterAll(async () => {
    if (state) await closeCliState(state, outputs);
  });
  return {
    get dir() {
      return dir();
    },
    outputs,
    acctops: (...args) => run(args),
    run,
  };
}

/**
 * A company's API keys as the sandbox of a local state holds them (its admin API, in a world of this
 * process): what the service itself would accept, whatever the CLI says. Loaded on first use, so
 * that tests which only spawn the binary do not load the local world.
 */
export async function serviceKeysOf(stateDir: string, companyId: string) {
  const [{ withLocalWorld }, { silentLogger }] = await Promise.all([
    import('../../cli/local/local-world.ts'),
    import('../../src/core/shared/logger.ts'),
  ]);
  return withLocalWorld({ stateDir, logger: silentLogger, env: cliEnv(), readOnly: true }, (world) =>
    world.sandbox.admin.listApiKeys({ companyId }),
  );
}

export function parseJson<T = Record<string, unknown>>(result: CliResult): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(`stdout is not JSON (exit ${result.code}):\n${result.stdout}\n${result.stderr}`);
  }
}
