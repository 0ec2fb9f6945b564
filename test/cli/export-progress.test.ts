import { runCli } from '../../cli/program';
import { monthOf } from '../../sandbox/seed';
import { expectNoCanaries } from '../helpers/canary';
import { cliEnv, tempStateDir, trackStateSecrets } from '../helpers/cli';

/**
 * The progress bar of `acctops export` is drawn only on a terminal. A child process's stderr is a
 * pipe, so this runs `runCli` (what the binary runs) in process with a stderr that says it is a TTY.
 */
describe('acctops export: progress on a TTY only', () => {
  it('draws the transactions progress of each company on a TTY stderr and clears it; nothing when piped', async () => {
    const state = await tempStateDir();
    try {
      const run = async (isTTY: boolean) => {
        let stdout = '';
        let stderr = '';
        const code = await runCli(['--state-dir', state.dir, 'export', '--month', monthOf(Date.now(), -1), '--format', 'csv'], {
          io: { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t), isTTY, columns: 100 } },
          env: cliEnv(),
          cwd: state.dir,
        });
        return { code, stdout, stderr };
      };
      const tty = await run(true);
      expect(tty.code).toBe(0);
      expect(tty.stderr).toMatch(/export [0-9a-f]{8} \[#+\.*\] +\d+% \d+\/\d+ transactions/);
      expect(tty.stderr.endsWith('\r\x1b[2K')).toBe(true);
      expect(tty.stdout).toMatch(/Export of \d{4}-\d{2} \(local mode, csv\)/);
      const piped = await run(false);
      expect(piped.code).toBe(0);
      expect(piped.stderr).toBe('');
      await trackStateSecrets(state.dir);
      expectNoCanaries([tty, piped], 'acctops output');
    } finally {
      await state.remove();
    }
  });
});
