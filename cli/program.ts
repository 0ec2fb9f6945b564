import { Command, CommanderError, Option } from 'commander';
import {
  checkRequiredOptionsLast,
  outputPair,
  regionName,
  rejectCredentialFlags,
  rejectRepeatedOptions,
  repeatable,
  stackName,
} from './args';
import { companiesCommand } from './commands/companies';
import { institutionCommand } from './commands/credentials';
import { doctorCommand } from './commands/doctor';
import { exportCommand } from './commands/export';
import { Host } from './commands/host';
import { keysCommand } from './commands/keys';
import { localCommand } from './commands/local';
import { sandboxCommand } from './commands/sandbox';
import { tokensCommand } from './commands/tokens';
import { usersCommand } from './commands/users';
import { describeError } from './errors';
import { ExitCode } from './exit-codes';
import { errorLine } from './output';
import type { CliRuntime } from './session';
import { TOOL_VERSION } from './version';

export type { CliRuntime } from './session';

const EPILOG = `
Modes:
  local (default)   an embedded sandbox, secrets and token store in --state-dir (.acctops/)
  AWS               --stack acctops-<stage> (or ACCTOPS_STACK): the deployed functions and secrets
  direct export     acctops export --base-url <url> with ACCTOPS_API_KEY (no state, no AWS, no stack)

Credentials come from the environment (ACCTOPS_API_KEY, ACCTOPS_INSTITUTION), Secrets Manager or
the local state, never from a flag.

Exit codes:
  0 ok   1 failure   2 usage   3 configuration   4 credential refused   5 partial or findings
  130, 143  stopped by Ctrl+C (SIGINT) or SIGTERM (only the binary gets them, not npx: README);
            sandbox, which runs until stopped, exits 0`;

/** The `acctops` command tree. */
export function buildProgram(host: Host): Command {
  const program = new Command('acctops')
    .description('Operate acctops: user tokens, API-key rotation, exports and health, locally or against a deployed stack.')
    .version(TOOL_VERSION, '-V, --version')
    .option('--json', 'print the result as one JSON document (for scripts)')
    .option('--state-dir <dir>', 'local mode: the state directory (default .acctops, or ACCTOPS_STATE_DIR)')
    .option('--stack <name>', 'AWS mode: the deployed stack, e.g. acctops-production (or ACCTOPS_STACK)', stackName)
    .option('--region <region>', 'AWS mode: the region (default AWS_REGION or the profile)', regionName)
    .addOption(
      repeatable(
        new Option('--output <Key=value>', 'AWS mode: name a stack output instead of discovering it (repeatable)').argParser(outputPair),
      ),
    )
    .option('-v, --verbose', 'log what the use cases do, as redacted JSON lines on stderr')
    .addHelpText('after', EPILOG)
    .showSuggestionAfterError(true);
  for (const command of [
    sandboxCommand(host),
    usersCommand(host),
    tokensCommand(host),
    keysCommand(host),
    companiesCommand(host),
    exportCommand(host),
    doctorCommand(host),
    institutionCommand(host),
    localCommand(host),
  ]) {
    program.addCommand(command);
  }
  const io = host.runtime.io;
  const configure = (command: Command) => {
    if (command.commands.length > 0) {
      command.helpCommand(false).addCommand(helpCommand());
      // In place of commander's unknownCommand, whose suggestion finds typos only: a word of a
      // subcommand's name (`local advance`) is suggested too.
      command.on('command:*', (operands: string[]) => {
        throw unknownCommand(
          operands[0] ?? '',
          command.commands.map((c) => c.name()),
        );
      });
    }
    command.exitOverride().configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      // Errors are printed once, by runCli, in one line without the refused value.
      outputError: () => undefined,
    });
    for (const sub of command.commands) configure(sub);
  };
  configure(program);
  rejectRepeatedOptions(program);
  checkRequiredOptionsLast(program);
  return program;
}

/**
 * `help [command...]` of a command with subcommands, in place of commander's own: that one answers a
 * word it does not know with the whole help and "a subcommand is missing". Here an unknown word is the
 * usage error of an unknown command (exit 2, shown by its glimpse, as `acctops <word>` is), and a
 * path of words (`help keys rotate`) reaches the subcommand's help.
 */
function helpCommand(): Command {
  return new Command('help')
    .description('display help for command')
    .argument('[command...]', 'the command (and subcommand)')
    .action((words: string[], _options: unknown, help: Command) => {
      let target = help.parent!;
      for (const word of words) {
        const next = target.commands.find((c) => c.name() === word || c.aliases().includes(word));
        if (next === undefined) {
          throw unknownCommand(
            word,
            target.commands.map((c) => c.name()).filter((name) => name !== 'help'),
          );
        }
        target = next;
      }
      target.help();
    });
}

/**
 * Commander's unknown-command error, in its words (cli/errors.ts shows the word only when it cannot
 * be a secret), with the command `names` it most likely meant.
 */
function unknownCommand(word: string, names: readonly string[]): CommanderError {
  const suggestion = suggestCommands(word, names);
  const hint = suggestion.length === 0 ? '' : `\n(Did you mean ${suggestion.join(' or ')}?)`;
  return new CommanderError(1, 'commander.unknownCommand', `error: unknown command '${word}'${hint}`);
}

/**
 * What a word that names no command most likely meant: the closest name (a typo), else the names it
 * begins or is a hyphenated word of (`advance` for `advance-clock`, `clock` for `advance-clock` and
 * `reset-clock`): edit distance alone finds none there, the rest of the name being too long.
 */
export function suggestCommands(word: string, names: readonly string[]): string[] {
  const closest = closestName(word, names);
  if (closest !== undefined) return [closest];
  if (word.length < 3) return [];
  return names.filter((name) => name !== word && (name.startsWith(word) || name.split('-').includes(word)));
}

/**
 * The command name a mistyped word most likely meant, as `acctops <word>` suggests it (commander's
 * rule: at most 3 edits, more than 40% of the longer word kept, the fewest edits). Commander does
 * not export its own, and `help <word>` is ours.
 */
export function closestName(word: string, names: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const name of names) {
    const distance = editDistance(word, name);
    const length = Math.max(word.length, name.length);
    if ((length - distance) / length > 0.4 && distance < bestDistance) {
      best = name;
      bestDistance = distance;
    }
  }
  return best;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 3) return Math.max(a.length, b.length);
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i]);
  for (let j = 0; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * Runs one invocation and resolves with its exit code (README, "Exit codes"). Never throws: every
 * failure is one line on stderr (one JSON object with --json) that says what to do.
 */
export async function runCli(argv: readonly string[], runtime: CliRuntime): Promise<number> {
  const host = new Host(runtime);
  try {
    rejectCredentialFlags(argv);
    await buildProgram(host).parseAsync([...argv], { from: 'user' });
    return host.session?.exitCode ?? ExitCode.ok;
  } catch (error) {
    if (error instanceof CommanderError && error.exitCode === 0) return ExitCode.ok;
    const missingSubcommand = error instanceof CommanderError && error.code === 'commander.help';
    const report = missingSubcommand
      ? { exitCode: ExitCode.usage, code: 'usage', message: 'a subcommand is missing', hint: 'see the list above' }
      : describeError(error);
    runtime.io.stderr.write(`${errorLine(report, argv.includes('--json'))}\n`);
    return report.exitCode;
  }
}
