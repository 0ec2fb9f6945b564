import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DirObjectStore, removeLocalDirectoriesMade } from '../../../src/adapters/local/dir-object-store';
import { ObjectStoreError } from '../../../src/core/exports/formats/period-errors';

/**
 * removeLocalDirectoriesMade (an export stopped by a signal): the empty folders this process's
 * stores made for their objects go; a folder that was there, or that holds a file, stays. It ends
 * every local write of the process, so it has a file of its own: the other DirObjectStore tests
 * write after it.
 */
describe('removeLocalDirectoriesMade', () => {
  let base: string;
  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), 'acctops-made-dirs-'));
  });
  afterAll(() => rm(base, { recursive: true, force: true }));

  it('removes the empty directories the stores made, deepest first, and keeps what existed or holds a file', async () => {
    const root = join(base, 'out');
    const store = new DirObjectStore(root);
    // There before: an empty folder of the user's, on the path of the run's keys.
    await mkdir(join(root, 'exports', 'company=a'), { recursive: true });
    await store.putObject('exports/company=a/period=2026-10/transactions/run=1/part-00000.csv', 'x');
    await store.putObject('exports/company=a/period=2026-10/_manifest.json', '{}');
    await store.putObject('exports/company=b/period=2026-10/transactions/run=2/part-00000.csv', 'y');
    // The run's files are deleted as unpublished (delete prunes upwards as it goes, so make one folder empty by hand).
    await rm(join(root, 'exports/company=a/period=2026-10/transactions/run=1/part-00000.csv'));
    await rm(join(root, 'exports/company=b/period=2026-10/transactions/run=2/part-00000.csv'));
    // A file someone else put in a folder the store made: that folder and its parents stay.
    const other = new DirObjectStore(join(base, 'other'));
    await other.putObject('p/q/r.txt', 'kept');
    await writeFile(join(base, 'other', 'p', 'q', 'mine.txt'), 'not the store');
    await rm(join(base, 'other', 'p', 'q', 'r.txt'));

    // run=1 and its transactions/ (period=2026-10 holds the manifest), and company=b's four.
    expect(await removeLocalDirectoriesMade()).toBe(6);

    expect(((await readdir(root, { recursive: true })) as string[]).sort()).toEqual([
      'exports',
      'exports/company=a',
      'exports/company=a/period=2026-10',
      'exports/company=a/period=2026-10/_manifest.json',
    ]);
    expect(((await readdir(join(base, 'other'), { recursive: true })) as string[]).sort()).toEqual(['p', 'p/q', 'p/q/mine.txt']);
    // The process is exiting: no store writes any more, a new one included.
    await expect(store.putObject('exports/later.json', '1')).rejects.toBeInstanceOf(ObjectStoreError);
    await expect(new DirObjectStore(join(base, 'new')).putObject('a/b.txt', '1')).rejects.toBeInstanceOf(ObjectStoreError);
    expect(await readdir(base)).toEqual(expect.not.arrayContaining(['new']));
  });
});
