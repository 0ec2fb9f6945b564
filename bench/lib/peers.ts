import { connectSandboxAdmin, type SandboxAdmin } from '../../sandbox';
import { startNode, tsxArgs, type RunningProcess } from './processes';

export interface SandboxProcess {
  baseUrl: string;
  admin: SandboxAdmin;
  /** The exact command, for BENCHMARKS.md. */
  command: string;
  process: RunningProcess;
  stop(): Promise<void>;
}

/**
 * The sandbox in its own process, exactly as `npm run sandbox -- --port 0 --no-demo <flags>` starts
 * it, driven through its admin HTTP API: its CPU and memory never mix with the measured process.
 */
export async function startSandboxProcess(flags: string[] = []): Promise<SandboxProcess> {
  const args = ['--port', '0', '--no-demo', ...flags];
  const running = await startNode(tsxArgs('bin/sandbox.ts', ...args), /base URL\s+(http:\/\/\S+)/);
  const baseUrl = running.match[1]!;
  return {
    baseUrl,
    admin: connectSandboxAdmin(baseUrl),
    command: `npm run sandbox -- ${args.join(' ')}`,
    process: running,
    stop: () => running.stop(),
  };
}

export interface DynaliteProcess {
  endpoint: string;
  stop(): Promise<void>;
}

/** dynalite (in memory) in its own process: bench/lib/serve-dynalite.ts. */
export async function startDynaliteProcess(): Promise<DynaliteProcess> {
  const running = await startNode(tsxArgs('bench/lib/serve-dynalite.ts'), /dynalite listening on (http:\/\/\S+)/);
  return { endpoint: running.match[1]!, stop: () => running.stop() };
}
