import { lockStateDir } from '../../cli/local/state-dir';

/**
 * An acctops process holding a state directory's lock until it is killed
 * (test/unit/cli/state-lock.test.ts): takes the lock of the directory in argv[2], says `held` on
 * stdout, and waits.
 */
void lockStateDir(process.argv[2]!).then(() => {
  process.stdout.write('held\n');
  setInterval(() => undefined, 60_000);
});
