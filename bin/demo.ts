// `npm start`: the embedded demo (README, "Two commands"). The CLI's local mode, scripted.
import { Command, CommanderError } from 'commander';
import { runDemo } from '../cli/demo';
import { describeError } from '../cli/errors';
import { DEFAULT_STATE_DIR, resolveStateDir } from '../cli/local/state-dir';
import { adoptHeldSignals, onInterruptBeforeWork, setForcedExitWriter, speak } from '../cli/interrupt';
import { errorLine, gatedStream } from '../cli/output';
import { reportStdoutFaultOnExit, watchOutputStreams } from '../cli/output-faults';
import { DIALECTS, type Dialect } from '../sandbox/dialect';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
// A reader that stops early (`| head`) or a full disk under `> file` fails a write: the command
// still finishes and saves its state instead of dying mid-command (cli/output-faults.ts).
const outputFaults = watchOutputStreams(process.stdout, process.stderr);
reportStdoutFaultOnExit(outputFaults, (report) => process.stderr.write(`${errorLine(report, false)}\n`));

// Once Ctrl-C is being handled the demo's one line is all it says (runDemo): the steps still under
// way would print their failures, caused by the interrupt.
const stdout = gatedStream(process.stdout);
const stderr = gatedStream(process.stderr);

/** Set once `--reset` starts deleting the previous state: a signal then leaves it partly deleted. */
let resetting = false;
// Until the demo opens its world, whose own step says what became of it (cli/demo.ts): a signal
// while the modules loaded (held by bin/demo.cjs) or the state is being opened.
onInterruptBeforeWork((signal) =>
  speak(() =>
    stderr.write(
      resetting
        ? `acctops: error: interrupted (${signal}): the demo was stopped while it deleted the previous state (run \`npm start -- --reset\` again)\n`
        : `acctops: error: interrupted (${signal}): the demo was stopped before its first step; nothing was changed (run \`npm start\` again)\n`,
    ),
  ),
);

// A second signal ends the demo at once with one line of what it cut short, as for acctops (bin/acctops.ts).
setForcedExitWriter((line) => process.stderr.write(`${errorLine(line, false)}\n`));

const program = new Command('npm start --')
  .description('Run the acctops demo against an embedded sandbox: onboard, refresh, rotate a key, export last month.')
  .option('--reset', 'delete the demo state first and start from scratch')
  .option(
    '--state-dir <dir>',
    'where the local state lives (shared with `npx acctops`)',
    process.env.ACCTOPS_STATE_DIR ?? DEFAULT_STATE_DIR,
  )
  .option(
    '--dialect <dialect>',
    `the embedded service's dialect when the state is created: ${DIALECTS.join(' or ')} (kept for later npx acctops commands)`,
  )
  .option('-v, --verbose', 'log the use cases as redacted JSON lines on stderr')
  .exitOverride()
  .configureOutput({ outputError: () => undefined });

async function main(): Promise<number> {
  try {
    program.parse(process.argv.slice(2), { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError && error.exitCode === 0) return 0;
    const report = describeError(error);
    stderr.write(`acctops: error: ${report.message}${report.hint ? ` (${report.hint})` : ''}\n`);
    return 2;
  }
  const opts = program.opts<{ reset?: boolean; stateDir: string; verbose?: boolean; dialect?: string }>();
  // Resolved, an empty directory is the cwd: the state files (credentials) would land among the user's files.
  if (opts.stateDir.trim() === '') {
    stderr.write('acctops: error: --state-dir (or ACCTOPS_STATE_DIR) is empty (name a directory, or leave both unset for .acctops)\n');
    return 2;
  }
  if (opts.dialect !== undefined && !(DIALECTS as readonly string[]).includes(opts.dialect)) {
    stderr.write(`acctops: error: --dialect must be one of ${DIALECTS.join(', ')} (run \`npm start -- --help\`)\n`);
    return 2;
  }
  resetting = opts.reset === true;
  try {
    const report = await runDemo({
      stateDir: resolveStateDir(opts.stateDir, process.cwd()),
      reset: opts.reset === true,
      io: { stdout, stderr },
      env: process.env,
      verbose: opts.verbose === true,
      ...(opts.dialect === undefined ? {} : { dialect: opts.dialect as Dialect }),
    });
    stdout.write(`\nFinished in ${(report.durationMs / 1000).toFixed(1)} s.\n`);
    return 0;
  } catch (error) {
    const report = describeError(error);
    stderr.write(`acctops: error: ${report.message}${report.hint ? ` (${report.hint})` : ''}\n`);
    return report.exitCode;
  }
}

// A signal held while the modules loaded is handled now, and the demo does not start.
if (!adoptHeldSignals()) {
  void main().then((code) => {
    process.exitCode = code;
  });
}
