// `npm run sandbox -- --port 4010 --seed 1 [--dialect minimal] [--show-credentials]`: the local Accounting API sandbox.
import { ExitCode } from '../cli/exit-codes';
import { describePortInUse, SandboxCliUsageError, runSandboxCli } from '../sandbox/cli';

// The exit codes of `acctops sandbox`, which takes the same flags (README, "Exit codes").
runSandboxCli(process.argv.slice(2), undefined, { showCommand: 'npm run sandbox -- --show-credentials' }).catch((error: unknown) => {
  if (error instanceof SandboxCliUsageError) {
    // Commander has printed why; its own code for a bad flag is 1.
    process.exitCode = error.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    return;
  }
  const inUse = describePortInUse(error);
  if (inUse !== undefined) {
    console.error(`sandbox: error: ${inUse.message} (${inUse.hint})`);
    process.exitCode = ExitCode.config;
    return;
  }
  console.error(`sandbox: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = ExitCode.failure;
});
