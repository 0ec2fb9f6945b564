// `npm run sandbox -- --port 4010 --seed 1 [--dialect minimal] [--show-credentials] [--json]`: the
// local Accounting API sandbox. It is `acctops sandbox` under another name (README, "Commands"): the
// same flags, `--json` included, the same exit codes and the same one-line errors.
import { errorLine } from '../cli/output';
import { reportStdoutFaultOnExit, watchOutputStreams } from '../cli/output-faults';
import { runCli } from '../cli/program';

// As for acctops (bin/acctops.ts): a failed write to stdout or stderr does not end the process.
const outputFaults = watchOutputStreams(process.stdout, process.stderr);
reportStdoutFaultOnExit(outputFaults, (report) => process.stderr.write(`${errorLine(report, process.argv.includes('--json'))}\n`));

void runCli(['sandbox', ...process.argv.slice(2)], {
  io: { stdout: process.stdout, stderr: process.stderr },
  env: process.env,
  cwd: process.cwd(),
  sandboxCommand: 'npm run sandbox --',
}).then((code) => {
  process.exitCode = code;
});
