import { resolve } from 'node:path';
import { runAcctops, tempStateDir } from '../helpers/cli';

/** Sends the binary a signal as it starts loading the CLI (the preload's only job). */
const SIGNAL_ON_LOAD = resolve(__dirname, '..', 'helpers', 'signal-on-load-preload.cjs');

/**
 * Ctrl-C or SIGTERM before the command has started anything (the CLI still loading, the first few
 * tenths of a second): one line says nothing was written, and the exit is the signal's code. Node's
 * default used to end the process without a word, where README promises an interrupted export a
 * line saying whether anything was published.
 */
describe('acctops: interrupted before the command started', () => {
  let state: { dir: string; remove(): Promise<void> };
  beforeAll(async () => {
    state = await tempStateDir();
  });
  afterAll(() => state.remove());

  const signalled = (signal: NodeJS.Signals, args: string[]) =>
    runAcctops(args, {
      env: { NODE_OPTIONS: `--require ${SIGNAL_ON_LOAD}`, ACCTOPS_TEST_SIGNAL_ON_LOAD: signal, ACCTOPS_API_KEY: 'ab_cdefghijklmnop' },
      // The export has no --out, so it stages in the working directory: one this suite removes, not
      // the shared temp directory.
      cwd: state.dir,
    });

  // Node dispatches the signal once the loaded CLI yields: an export has registered its own step by
  // then, whose line says the same; `keys rotate` has not opened the state yet.
  const EXPORT = ['export', '--base-url', 'http://127.0.0.1:9/api/v1', '--month', '2026-01'];
  const ROTATE = ['keys', 'rotate', '--company', '00000000-0000-4000-8000-000000000000'];
  it.each([
    ['SIGINT', 130, EXPORT, /^acctops: error: interrupted \(SIGINT\)(?: before anything was written|: .*; nothing was published .*)\n$/],
    ['SIGTERM', 143, EXPORT, /^acctops: error: interrupted \(SIGTERM\)(?: before anything was written|: .*; nothing was published .*)\n$/],
    ['SIGINT', 130, ROTATE, /^acctops: error: interrupted \(SIGINT\) before anything was written\n$/],
    ['SIGTERM', 143, ROTATE, /^acctops: error: interrupted \(SIGTERM\) before anything was written\n$/],
  ] as const)('%s: exit %i and one line (%j)', async (signal, code, args, line) => {
    const result = await signalled(signal, ['--state-dir', state.dir, ...args]);
    expect(result.code).toBe(code);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(line);
  });

  it('--json: the line is the JSON error object', async () => {
    const result = await signalled('SIGINT', ['--json', '--state-dir', state.dir, ...ROTATE]);
    expect(result.code).toBe(130);
    expect(JSON.parse(result.stderr)).toEqual({
      error: { exitCode: 130, code: 'interrupted', message: 'interrupted (SIGINT) before anything was written', hint: null },
    });
  });
});
