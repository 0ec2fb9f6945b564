import { mkdir, readdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { runAcctops, tempStateDir } from '../helpers/cli';

/**
 * A --state-dir the file system refuses in a way nobody listed (a name too long, a symbolic link
 * loop, /proc/self, a state file that is a directory) is exit 3 with one line naming the path and
 * the cause in words with its errno code (README, "Exit codes"): these were exit 1 with Node's raw
 * `Error: ELOOP: …`.
 */
describe('acctops --state-dir: every file-system refusal is configuration, said in words', () => {
  let own: { dir: string; remove(): Promise<void> };
  const longName = 'd'.repeat(300);

  beforeAll(async () => {
    own = await tempStateDir();
    await symlink('self-loop', join(own.dir, 'self-loop'));
    await mkdir(join(own.dir, 'state-as-dir', 'state.json'), { recursive: true });
  });
  afterAll(() => own.remove());

  /** One error line, no Node error or stack in it. */
  const oneCleanLine = (stderr: string) => {
    const lines = stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^acctops: error: /);
    expect(lines[0]).not.toMatch(/Error: |\bat .*\.(c?js|ts):\d+/);
    return lines[0]!;
  };

  it.each([
    [
      'a name over 255 bytes',
      () => join(own.dir, 'x', longName),
      /cannot be created: the path or a name in it is too long \(ENAMETOOLONG\) \(name a shorter path with --state-dir or ACCTOPS_STATE_DIR: most file systems allow 255 bytes a name, and its longest has 300\)$/,
    ],
    [
      'a symbolic link to itself',
      () => join(own.dir, 'self-loop'),
      /cannot be created: too many levels of symbolic links, as for a link that points to itself \(ELOOP\) \(name a real directory with --state-dir or ACCTOPS_STATE_DIR: a symbolic link on the path leads back to itself\)$/,
    ],
    [
      'a path through a symbolic link loop',
      () => join(own.dir, 'self-loop', 'sub'),
      /cannot be created: too many levels of symbolic links.* \(ELOOP\)/,
    ],
    [
      '/proc/self (a directory that takes no file)',
      () => '/proc/self',
      /cannot be written: no such file or directory, .* \(ENOENT\) \(name a directory you can write/,
    ],
  ])('%s: exit 3, one line naming the path and the cause with its code, in text and --json', async (_what, dirOf, cause) => {
    const dir = dirOf();
    const shown = dir.length > 120 ? `${dir.slice(0, 60)}…${dir.slice(-40)}` : dir;
    const text = await runAcctops(['--state-dir', dir, 'users', 'list']);
    expect(text.code).toBe(3);
    expect(text.stdout).toBe('');
    const line = oneCleanLine(text.stderr);
    expect(line.startsWith(`acctops: error: the state directory ${shown} (--state-dir or ACCTOPS_STATE_DIR) cannot be `)).toBe(true);
    expect(line).toMatch(cause);
    // A huge path is shown once, shortened: the line stays readable.
    expect(line).not.toContain(longName);

    const json = await runAcctops(['--json', '--state-dir', dir, 'users', 'list']);
    expect(json.code).toBe(3);
    expect(JSON.parse(oneCleanLine(`acctops: error: ${json.stderr}`).slice('acctops: error: '.length))).toEqual({
      error: {
        exitCode: 3,
        code: 'state_dir_unwritable',
        message: expect.stringMatching(/ \(E[A-Z]+\)$/) as unknown,
        hint: expect.any(String),
      },
    });
  });

  it('local reset and local repair of a symbolic link loop: exit 3 with the same words, not "nothing to repair"', async () => {
    for (const args of [
      ['local', 'reset', '--yes'],
      ['local', 'repair'],
    ]) {
      const result = await runAcctops(['--state-dir', join(own.dir, 'self-loop'), ...args]);
      expect(result.code).toBe(3);
      expect(oneCleanLine(result.stderr)).toMatch(
        /the state directory \S+self-loop .* cannot be read: too many levels of symbolic links.* \(ELOOP\)/,
      );
    }
  });

  it('a state file that is a directory: exit 3 naming the file and the cause, and the directory is left as it is', async () => {
    const result = await runAcctops(['--state-dir', join(own.dir, 'state-as-dir'), 'users', 'list']);
    expect(result.code).toBe(3);
    expect(oneCleanLine(result.stderr)).toBe(
      `acctops: error: the local state file ${join(own.dir, 'state-as-dir', 'state.json')} cannot be read: a directory is where a file should be (EISDIR) (it should be a file acctops wrote: move what is there aside, or name another --state-dir)`,
    );
    expect(await readdir(join(own.dir, 'state-as-dir', 'state.json'))).toEqual([]);
  });

  it('a state directory that cannot be created leaves none of the parents it made, and no other directory is touched', async () => {
    const before = (await readdir(own.dir)).sort();
    const result = await runAcctops(['--state-dir', join(own.dir, 'made', 'deeper', longName), 'users', 'list']);
    expect(result.code).toBe(3);
    // makeDirectory made made/ and made/deeper/ before the name too long failed: both are gone again.
    expect((await readdir(own.dir)).sort()).toEqual(before);
    expect(before).toEqual(['self-loop', 'state-as-dir']);
  });
});
