// `npm run sandbox -- --port 4010 --seed 1`: the local Accounting API sandbox (sandbox-only demo credentials).
import { SandboxCliUsageError, runSandboxCli } from '../sandbox/cli';

runSandboxCli(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof SandboxCliUsageError) {
    process.exitCode = error.exitCode;
    return;
  }
  console.error(`sandbox: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
});
