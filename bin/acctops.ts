// The `acctops` CLI (README, "The acctops CLI"); bin/acctops.cjs runs this file through tsx.
import { adoptHeldSignals, interruptExitCode, onInterruptBeforeWork, setForcedExitWriter, speak } from '../cli/interrupt';
import { errorLine, gatedStream } from '../cli/output';
import { reportStdoutFaultOnExit, watchOutputStreams } from '../cli/output-faults';
import { redactString } from '../src/core/shared/redact';
import { runCli } from '../cli/program';

// The SDK's advice to upgrade Node would land in the middle of a command's output; the engines
// field of package.json is where the supported Node versions are stated.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
// A reader that stops early (`| head`) or a full disk under `> file` fails a write: the command
// still finishes and saves its state instead of dying mid-command (cli/output-faults.ts).
const outputFaults = watchOutputStreams(process.stdout, process.stderr);
reportStdoutFaultOnExit(outputFaults, (report) => process.stderr.write(`${errorLine(report, process.argv.includes('--json'))}\n`));

// Until the command starts its work, a signal is answered here (cli/interrupt.ts); --json is
// looked for in argv, the options not being parsed yet.
onInterruptBeforeWork((signal) =>
  speak(() =>
    process.stderr.write(
      `${errorLine({ exitCode: interruptExitCode(signal), code: 'interrupted', message: `interrupted (${signal}) before anything was written` }, process.argv.includes('--json'))}\n`,
    ),
  ),
);
// A second signal ends the process at once; its one line is written here, synchronously (stderr is
// synchronous for files, pipes and terminals on Linux and macOS), as the process exits right after.
setForcedExitWriter((line) => process.stderr.write(`${redactString(errorLine(line, process.argv.includes('--json')))}\n`));
adoptHeldSignals();

void runCli(process.argv.slice(2), {
  io: { stdout: gatedStream(process.stdout), stderr: gatedStream(process.stderr) },
  env: process.env,
  cwd: process.cwd(),
}).then((code) => {
  process.exitCode = code;
});
