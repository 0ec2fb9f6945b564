import { fork } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The atomic writes of the local mode's credential files: a process that exits while one is under
 * way (Ctrl-C's exit does not wait for a write its steps did not start) leaves no temporary file,
 * which would hold the whole file, tokens and all, for good.
 */
describe('writePrivateJsonFile', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'acctops-private-json-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('a write abandoned by the process exiting removes its temporary file on the way out', async () => {
    const child = fork(join(__dirname, '..', '..', 'helpers', 'abandoned-write-child.ts'), [dir], { execArgv: ['--import', 'tsx'] });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(130);
    expect(await readdir(dir)).toEqual([]);
  });
});
