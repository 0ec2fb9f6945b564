// `npm run sandbox -- --port 4010 --seed 1 [--dialect minimal] [--show-credentials] [--json]`: the
// local Accounting API sandbox. It is `acctops sandbox` under another name (README, "Commands"): the
// same flags, `--json` included, the same exit codes and the same one-line errors.
import { runCli } from '../cli/program';

for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
}

void runCli(['sandbox', ...process.argv.slice(2)], {
  io: { stdout: process.stdout, stderr: process.stderr },
  env: process.env,
  cwd: process.cwd(),
  sandboxCommand: 'npm run sandbox --',
}).then((code) => {
  process.exitCode = code;
});
