import { Command } from 'commander';
import { sandboxCommand as sandboxFlags } from '../../sandbox/cli-flags';
import { rejectRepeatedOptions } from '../args';
import { CliError, withoutValues } from '../errors';
import { ExitCode } from '../exit-codes';
import { jsonSafe } from '../output';
import type { CommandHost } from './host';

/**
 * `acctops sandbox [flags]`: the sandbox's own command line (sandbox/cli.ts), which keeps its flags
 * and help. The demo credentials are shown by prefix unless --show-credentials: acctops prints no
 * credential by default, even a sandbox-only one. A signal is how its run ends: it stops the server
 * and exits 0, not 130 or 143 (decision 87). `npm run sandbox` is this command (bin/sandbox.ts).
 */
export function sandboxCommand(host: CommandHost): Command {
  const command = new Command('sandbox')
    .description('Run the local Accounting API sandbox until Ctrl+C.')
    .helpOption(false)
    .allowUnknownOption(true)
    .allowExcessArguments(true)
    .action(
      host.run(async (session, _opts, command) => {
        // --show-credentials and --dialect are the sandbox command's own flags (sandbox/cli.ts).
        // No `err`: commander's error text would repeat the refused value; the error below is reported once, on stderr.
        // With --json, stdout holds the one JSON object that describes the sandbox; the lines that follow
        // it (stopping, the sandbox's --verbose requests) go to stderr, so stdout stays parseable.
        const json = session.out.json;
        const lines = json ? session.runtime.io.stderr : session.runtime.io.stdout;
        const io = { out: (line: string) => lines.write(`${line}\n`) };
        // Only this command loads the sandbox's server.
        const sandboxCli = await import('../../sandbox/cli.ts');
        // `-v, --verbose` is also the program's own option, which commander takes wherever it stands
        // (`acctops sandbox --verbose` too): passed on, so the sandbox logs its requests as documented.
        const argv = session.flags.verbose === true ? [...command.args, '--verbose'] : command.args;
        const name = session.runtime.sandboxCommand ?? SANDBOX_USAGE_NAME;
        try {
          const run = await sandboxCli.runSandboxCli(argv, io, {
            showCommand: `${name} --show-credentials`,
            // The sandbox's flags are parsed there, out of reach of the program's own check.
            configure: (flags) => {
              rejectRepeatedOptions(flags);
              flags.name(name);
            },
            // Written as is, like the text banner: the keys in it are the sandbox's own, by prefix unless
            // --show-credentials, and the redactor would blank the ones it knows.
            ...(json ? { announce: (d) => session.runtime.io.stdout.write(`${jsonSafe(JSON.stringify(d, null, 2))}\n`) } : {}),
          });
          await run.done;
        } catch (error) {
          if (error instanceof sandboxCli.SandboxCliUsageError) {
            if (error.exitCode === 0) return;
            throw new CliError(withoutValues(error.message), {
              code: 'usage',
              exitCode: ExitCode.usage,
              hint: `run \`${name} --help\``,
              cause: error,
            });
          }
          const inUse = sandboxCli.describePortInUse(error);
          if (inUse === undefined) throw error;
          throw new CliError(inUse.message, { code: 'port_in_use', exitCode: ExitCode.config, hint: inUse.hint, cause: error });
        }
      }),
    );
  // `acctops help sandbox` shows the sandbox's own flags, as `acctops sandbox --help` does: they are
  // parsed by sandbox/cli.ts, so this command declares none of its own.
  command.helpInformation = () =>
    sandboxFlags()
      .name(host.runtime.sandboxCommand ?? SANDBOX_USAGE_NAME)
      .helpInformation();
  return command;
}

/** The name in the sandbox's usage line when acctops runs it. */
const SANDBOX_USAGE_NAME = 'acctops sandbox';
