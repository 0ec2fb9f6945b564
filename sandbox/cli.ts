import { CommanderError, type Command } from 'commander';
import { sandboxCommand } from './cli-flags';
import { JsonLogger } from '../src/core/shared/logger';
import { keyPrefix } from '../src/core/shared/redact';
import type { DemoCredentials } from './admin';
import { startSandbox, type Dialect, type RunningSandbox, type SandboxOptions } from './index';

/**
 * `npm run sandbox` (and `acctops sandbox`): starts the sandbox, prints where it listens and the
 * demo credentials, and stops cleanly on SIGINT or SIGTERM. The credentials are this run's (random,
 * not the seed's), which work against this sandbox only; even so they are shown by prefix unless
 * `--show-credentials`, because terminal output ends up in logs and screenshots.
 */

/** Bad flags, or `--help`/`--version` (exit code 0): commander has already printed the text. */
export class SandboxCliUsageError extends Error {
  readonly exitCode: number;

  constructor(error: CommanderError) {
    super(error.message, { cause: error });
    this.name = 'SandboxCliUsageError';
    this.exitCode = error.exitCode;
  }
}

export interface SandboxCliIo {
  out(line: string): void;
  /**
   * Commander's error text (bad flags). Left out, it is not printed: the caller reports the
   * SandboxCliUsageError itself (acctops, in its own one-line form without the refused value).
   */
  err?(line: string): void;
}

export interface SandboxCliRun {
  sandbox: RunningSandbox;
  /** Stops the sandbox and removes the signal handlers; resolves once it is down. */
  stop(): Promise<void>;
  /** Resolves when the sandbox has stopped, by signal or by `stop`. */
  done: Promise<void>;
}

export { sandboxCommand };

/**
 * `--port` names a port another process listens on (listen's EADDRINUSE), in words: the port and
 * the host, and what to do, for `npm run sandbox` and `acctops sandbox` alike (both exit 3: the
 * setting is wrong, not the sandbox). Undefined for any other error.
 */
export function describePortInUse(error: unknown): { message: string; hint: string } | undefined {
  const e = error as NodeJS.ErrnoException & { address?: unknown; port?: unknown };
  if (!(error instanceof Error) || e.code !== 'EADDRINUSE') return undefined;
  const where = `port ${typeof e.port === 'number' ? e.port : '(asked for)'}${typeof e.address === 'string' ? ` on ${e.address}` : ''}`;
  return { message: `${where} is in use`, hint: 'another process listens there: pass another --port, or 0 for any free one' };
}

/**
 * The demo credentials as text. `mask` shows keys by their prefix and hides the institution secret:
 * for `acctops sandbox`, whose output, like all of the acctops CLI's, shows no credential.
 */
export function formatDemoCredentials(demo: DemoCredentials, options: { mask?: boolean } = {}): string[] {
  const mask = options.mask === true;
  const header = mask ? `${demo.institution.id}:<secret hidden; --show-credentials prints it>` : demo.institution.header;
  const lines = [demo.notice, '', `Institution header   Institution: ${header}`, '', 'Companies and API keys:'];
  for (const company of demo.companies) {
    lines.push(`  ${company.name}  publicId=${company.publicId}  ${company.currency}`);
    for (const key of company.apiKeys) {
      lines.push(`    ${key.name.padEnd(24)} ${mask ? `${keyPrefix(key.key)}…` : key.key}  [${key.permissions.join(', ')}]`);
    }
  }
  lines.push('', `Users of ${demo.institution.id} (tokens: POST /institution/users/token/retrieve/ with these three fields):`);
  for (const user of demo.users) {
    lines.push(`  ${user.username.padEnd(6)} email=${user.email}  external_id=${user.externalId}  companies=${user.companies.length}`);
  }
  return lines;
}

/**
 * What the banner says, as data (`acctops --json sandbox`): every key present, the credentials by
 * prefix unless `mask` is false, when `key` and the institution's `secret` hold them in full.
 */
export interface SandboxDescription {
  baseUrl: string;
  adminUrl: string;
  port: number;
  dialect: Dialect;
  demo: {
    notice: string;
    institution: { id: string; secret: string | null };
    companies: {
      name: string;
      publicId: string;
      currency: string;
      apiKeys: { name: string; keyPrefix: string; key: string | null; permissions: string[] }[];
    }[];
    users: { username: string; email: string; externalId: string; companies: number }[];
  } | null;
  /** The command that prints the credentials in full, when they are masked; else null. */
  showCredentialsCommand: string | null;
}

export function describeSandbox(sandbox: RunningSandbox, options: { mask: boolean; showCommand?: string }): SandboxDescription {
  const { mask } = options;
  const demo = sandbox.demo;
  return {
    baseUrl: sandbox.baseUrl,
    adminUrl: sandbox.adminUrl,
    port: sandbox.port,
    dialect: sandbox.dialect,
    demo:
      demo === null
        ? null
        : {
            notice: demo.notice,
            institution: { id: demo.institution.id, secret: mask ? null : demo.institution.secret },
            companies: demo.companies.map((c) => ({
              name: c.name,
              publicId: c.publicId,
              currency: c.currency,
              apiKeys: c.apiKeys.map((k) => ({
                name: k.name,
                keyPrefix: keyPrefix(k.key),
                key: mask ? null : k.key,
                permissions: k.permissions,
              })),
            })),
            users: demo.users.map((u) => ({
              username: u.username,
              email: u.email,
              externalId: u.externalId,
              companies: u.companies.length,
            })),
          },
    showCredentialsCommand: demo !== null && mask ? (options.showCommand ?? null) : null,
  };
}

/** Parses `argv` (the arguments after the command), starts the sandbox and prints how to use it. */
export async function runSandboxCli(
  argv: string[],
  io: SandboxCliIo = { out: (line) => console.log(line), err: (line) => console.error(line) },
  options: {
    handleSignals?: boolean;
    /** Overrides --show-credentials (acctops sandbox decides itself). */
    maskCredentials?: boolean;
    /** The command a user types to see the full credentials, shown when they are masked. */
    showCommand?: string;
    /** Called with the flags' command before it parses (acctops adds its checks of the flags). */
    configure?: (command: Command) => void;
    /**
     * Prints where the sandbox listens in place of the text banner (`acctops --json sandbox`: one
     * JSON object). `io.out` still gets the lines that follow (stopping, --verbose requests).
     */
    announce?: (description: SandboxDescription) => void;
  } = {},
): Promise<SandboxCliRun> {
  const command = sandboxCommand()
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s.trimEnd()), writeErr: (s) => io.err?.(s.trimEnd()) });
  options.configure?.(command);
  try {
    command.parse(argv, { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) throw new SandboxCliUsageError(error);
    throw error;
  }
  const flags = command.opts<{
    port: number;
    seed: string;
    demo: boolean;
    amountEncoding: string;
    displayLabels?: boolean;
    rateLimit?: number;
    latency: number;
    dialect: Dialect;
    showCredentials?: boolean;
    verbose?: boolean;
  }>();
  const mask = options.maskCredentials ?? flags.showCredentials !== true;
  const sandbox = await startSandbox({
    port: flags.port,
    seed: /^\d+$/.test(flags.seed) ? Number(flags.seed) : flags.seed,
    demo: flags.demo,
    amountEncoding: flags.amountEncoding as SandboxOptions['amountEncoding'],
    displayLabels: flags.displayLabels === true,
    rateLimit: flags.rateLimit === undefined ? null : { requestsPerSecond: flags.rateLimit },
    latencyMs: flags.latency,
    dialect: flags.dialect,
    ...(flags.verbose ? { logger: new JsonLogger((line) => io.out(line), {}, 'debug') } : {}),
  });

  let resolveDone!: () => void;
  const done = new Promise<void>((resolve) => (resolveDone = resolve));
  const handleSignals = options.handleSignals ?? true;
  const onSignal = (signal: NodeJS.Signals) => {
    io.out(`received ${signal}, stopping`);
    void stop();
  };
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      if (handleSignals) {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
      await sandbox.stop();
      io.out('sandbox stopped');
      resolveDone();
    })();
    return stopping;
  };
  if (handleSignals) {
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  }

  if (options.announce) {
    options.announce(describeSandbox(sandbox, { mask, showCommand: options.showCommand }));
    return { sandbox, stop, done };
  }
  io.out(`Accounting API sandbox`);
  io.out(`  base URL   ${sandbox.baseUrl}`);
  io.out(`  admin API  ${sandbox.adminUrl}  (POST /__sandbox/<operation>, see sandbox/README.md)`);
  io.out(`  dialect    ${sandbox.dialect}`);
  io.out('');
  for (const line of sandbox.demo ? formatDemoCredentials(sandbox.demo, { mask }) : ['No demo data (--no-demo).']) io.out(line);
  if (sandbox.demo && mask && options.showCommand !== undefined) {
    io.out('');
    io.out(`Full demo credentials (sandbox only): ${options.showCommand}`);
  }
  io.out('');
  io.out(handleSignals ? 'Press Ctrl+C to stop.' : 'Running.');
  return { sandbox, stop, done };
}
