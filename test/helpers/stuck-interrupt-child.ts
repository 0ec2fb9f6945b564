import { interruptExitCode, onForcedExit, onInterrupt, setForcedExitWriter } from '../../cli/interrupt';
import { errorLine } from '../../cli/output';

/**
 * A command whose interrupt step never ends (test/cli/interrupt-bound.test.ts), run with
 * `--import tsx`: the writer is the binary's (bin/acctops.ts), a part says what is left, and the
 * step hangs, so that only the steps' bound can end the process. Says `ready` on stdout once the
 * step is registered; `--json` in argv asks for the JSON line, as the binary does.
 */
setForcedExitWriter((line) => process.stderr.write(`${errorLine(line, process.argv.includes('--json'))}\n`));
onForcedExit(() => 'the local state was not saved (a part of this test)');
onInterrupt(() => new Promise<void>(() => undefined));
// Kept alive by the step's own wait in a real command; here by a timer far past the bound.
setTimeout(() => process.exit(interruptExitCode('SIGINT') + 100), 30_000);
process.stdout.write('ready\n');
