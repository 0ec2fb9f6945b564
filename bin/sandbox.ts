// `npm run sandbox -- --port 4010 --seed 1 [--dialect minimal] [--show-credentials]`: the local Accounting API sandbox.
import { SandboxCliUsageError, runSandboxCli } from '../sandbox/cli';

runSandboxCli(process.argv.slice(2), undefined, { showCommand: 'npm run sandbox -- --show-credentials' }).catch((error: unknown) => {
  if (error instanceof SandboxCliUsageError) {
    process.exitCode = error.exitCode;
    return;
  }
  console.error(`sandbox: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
});
