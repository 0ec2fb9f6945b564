import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import * as path from 'node:path';
import { createInterface } from 'node:readline';

export const ROOT = path.resolve(__dirname, '..', '..');
/** Scratch space for bundles and export output; git- and lint-ignored. */
export const OUT_DIR = path.join(ROOT, '.bench-out');

/** A child process that printed a line we waited for; `stop` sends SIGTERM to that pid only. */
export interface RunningProcess {
  child: ChildProcess;
  /** The first stdout line that matched. */
  match: RegExpMatchArray;
  stop(): Promise<void>;
}

/**
 * Starts `node <args>` and resolves once a stdout line matches `ready` (e.g. the sandbox's base
 * URL). One process per pid: `node --import tsx` rather than the `tsx` wrapper, which would put a
 * second process between us and the one to stop.
 */
export async function startNode(args: string[], ready: RegExp, options: { timeoutMs?: number } = {}): Promise<RunningProcess> {
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const lines = createInterface({ input: child.stdout! });
  const match = await new Promise<RegExpMatchArray>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${args.join(' ')}: not ready after ${options.timeoutMs ?? 60_000} ms\n${stderr}`)),
      options.timeoutMs ?? 60_000,
    );
    lines.on('line', (line) => {
      const found = line.match(ready);
      if (found) {
        clearTimeout(timer);
        resolve(found);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${args.join(' ')} exited with ${code} before it was ready\n${stderr}`));
    });
  });
  // Keep draining stdout so that the child never blocks on a full pipe.
  lines.on('line', () => undefined);
  return {
    child,
    match,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * Runs `node <args>` to completion and returns the JSON object it printed as its last stdout line.
 * A non-zero exit is an error carrying the child's stderr. `env`, when given, is the child's whole
 * environment.
 */
export async function runNodeJson<T>(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {},
): Promise<T> {
  const child = spawn(process.execPath, args, {
    cwd: options.cwd ?? ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: options.env ?? process.env,
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-8000);
  });
  const timeoutMs = options.timeoutMs ?? 300_000;
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  clearTimeout(timer);
  if (code !== 0) throw new Error(`node ${args.join(' ')} failed (${signal ?? code})\n${stderr}`);
  const last = stdout.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(last) as T;
  } catch {
    throw new Error(`node ${args.join(' ')} printed no JSON result\n${stdout.slice(-2000)}\n${stderr}`);
  }
}

/** `node --import tsx <script>`: a TypeScript entry run directly, in one process. */
export function tsxArgs(script: string, ...args: string[]): string[] {
  return ['--import', 'tsx', path.join(ROOT, script), ...args];
}
