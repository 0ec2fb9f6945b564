import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ACCTOPS_BIN, cliEnv, tempStateDir } from '../helpers/cli';

/**
 * What a command loads (BENCHMARKS.md, "CLI start-up"): the Parquet writer and the S3 client come
 * with `import()` of cli/operations/export-run.ts, so `--help` and `users list` never load them, and
 * a command that exports or reads exports does. Recorded by a preload that watches `require`.
 */
describe('acctops CLI: heavy modules load only for the commands that need them', () => {
  const HEAVY = /^(hyparquet-writer|@aws-sdk\/client-s3|@aws-sdk\/lib-storage)$/;
  let state: Awaited<ReturnType<typeof tempStateDir>>;
  let probe: string;

  beforeAll(async () => {
    state = await tempStateDir();
    // Inside the state's temporary directory, so that removing it removes the probe too.
    probe = join(state.dir, 'probe.cjs');
    await writeFile(
      probe,
      [
        "const Module = require('node:module');",
        'const seen = new Set();',
        'const load = Module._load;',
        `Module._load = function (request, ...rest) { if (${HEAVY}.test(request)) seen.add(request); return load.call(this, request, ...rest); };`,
        "process.on('exit', () => require('node:fs').writeFileSync(process.env.PROBE_OUT, JSON.stringify([...seen].sort())));",
      ].join('\n'),
    );
  });
  afterAll(() => state.remove());

  const loadedBy = async (args: string[]): Promise<string[]> => {
    const out = join(state.dir, 'probe-out.json');
    await new Promise<void>((done, fail) =>
      execFile(
        process.execPath,
        ['-r', probe, ACCTOPS_BIN, '--state-dir', join(state.dir, 'state'), ...args],
        { env: cliEnv({ PROBE_OUT: out }), timeout: 60_000 },
        (error) => (error ? fail(error) : done()),
      ),
    );
    return JSON.parse(await readFile(out, 'utf8')) as string[];
  };

  it('--help and users list load neither the Parquet writer nor the S3 client; local status does', async () => {
    expect(await loadedBy(['--help'])).toEqual([]);
    expect(await loadedBy(['users', 'list'])).toEqual([]);
    // The control: the probe sees them when export-run is loaded (local status names the exports directory).
    expect(await loadedBy(['local', 'status'])).toEqual(expect.arrayContaining(['hyparquet-writer']));
  });
});
