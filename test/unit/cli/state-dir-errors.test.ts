import { mkdir, mkdtemp, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { missingDirectories, removeEmptyDirectories } from '../../../cli/created-dirs';
import { ExitCode } from '../../../cli/exit-codes';
import { fsCauseText, isFsError, shortPath } from '../../../cli/fs-failure';
import {
  createStateDir,
  lockStateDir,
  StateDirNotDirectoryError,
  stateDirExists,
  StateDirUnwritableError,
} from '../../../cli/local/state-dir';

const errnoError = (code: string) => Object.assign(new Error(`${code}: raw, open '/x'`), { code, syscall: 'open', path: '/x' });

describe('fs-failure: a file system refusal in words, with its code', () => {
  it('known codes in our words, any other in libuv’s, always with the code', () => {
    expect(fsCauseText(errnoError('ELOOP'))).toBe('too many levels of symbolic links, as for a link that points to itself (ELOOP)');
    expect(fsCauseText(errnoError('ENAMETOOLONG'))).toBe('the path or a name in it is too long (ENAMETOOLONG)');
    // Listed nowhere here: libuv's words, not the raw message.
    expect(fsCauseText(errnoError('ENOSYS'))).toBe('function not implemented (ENOSYS)');
    expect(fsCauseText(errnoError('EWHATEVER'))).toBe('an error of the file system (EWHATEVER)');
  });

  it('only an error of a file-system call counts (a code and a syscall)', async () => {
    expect(isFsError(await stat('/nonexistent-acctops').catch((e: unknown) => e))).toBe(true);
    expect(isFsError(Object.assign(new Error('x'), { code: 'ENOENT' }))).toBe(false);
    expect(isFsError(Object.assign(new Error('x'), { code: 'state_locked', syscall: 'open' }))).toBe(false);
    expect(isFsError('ENOENT')).toBe(false);
  });

  it('a huge path is shown by its start and end; a short one whole', () => {
    expect(shortPath('/tmp/a')).toBe('/tmp/a');
    const long = `/tmp/x/${'d'.repeat(300)}/end`;
    const shown = shortPath(long);
    expect(shown).toBe(`${long.slice(0, 60)}…${long.slice(-40)}`);
    expect([...shown].length).toBe(101);
  });
});

describe('the state directory: every file-system refusal is StateDirUnwritableError (exit 3)', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'acctops-state-errors-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  const refusal = (promise: Promise<unknown>) =>
    promise.then(
      () => undefined,
      (e: unknown) => e,
    );

  it.each([
    ['a symbolic link to itself', 'loop', 'ELOOP', 'created'],
    ['a name over 255 bytes', 'n'.repeat(300), 'ENAMETOOLONG', 'created'],
  ])('createStateDir on %s: exit 3, the step, the words and the code', async (_what, name, code, step) => {
    await symlink('loop', join(dir, 'loop'));
    const error = await refusal(createStateDir(join(dir, name)));
    expect(error).toBeInstanceOf(StateDirUnwritableError);
    const e = error as StateDirUnwritableError;
    expect(e.exitCode).toBe(ExitCode.config);
    expect(e.code).toBe('state_dir_unwritable');
    expect(e.message).toContain(`cannot be ${step}: `);
    expect(e.message).toMatch(new RegExp(`\\(${code}\\)$`));
    expect(e.message).not.toContain('n'.repeat(200));
  });

  it('createStateDir removes the parents it made when the last name fails, and nothing that was there', async () => {
    await writeFile(join(dir, 'mine'), 'x');
    await refusal(createStateDir(join(dir, 'a', 'b', 'n'.repeat(300))));
    expect(await readdir(dir)).toEqual(['mine']);
  });

  it('a file in the way is still StateDirNotDirectoryError', async () => {
    await writeFile(join(dir, 'file'), 'x');
    expect(await refusal(createStateDir(join(dir, 'file', 'sub')))).toBeInstanceOf(StateDirNotDirectoryError);
  });

  it('lockStateDir in a directory that takes no file (/proc/self): written, ENOENT, exit 3', async () => {
    const error = await refusal(lockStateDir('/proc/self'));
    expect(error).toBeInstanceOf(StateDirUnwritableError);
    expect((error as Error).message).toMatch(
      /^the state directory \/proc\/self \(--state-dir or ACCTOPS_STATE_DIR\) cannot be written: .* \(ENOENT\)$/,
    );
  });

  it('stateDirExists: missing is false, a loop is the error', async () => {
    await symlink('loop', join(dir, 'loop'));
    expect(await stateDirExists(join(dir, 'missing'))).toBe(false);
    expect(await stateDirExists(dir)).toBe(true);
    expect(await refusal(stateDirExists(join(dir, 'loop')))).toBeInstanceOf(StateDirUnwritableError);
  });
});

describe('created-dirs: a failed run takes away only the empty directories it made', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'acctops-created-dirs-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('lists the missing path and parents, deepest first, and stops at the first that exists', async () => {
    expect(await missingDirectories(join(dir, 'a', 'b', 'c'))).toEqual([join(dir, 'a', 'b', 'c'), join(dir, 'a', 'b'), join(dir, 'a')]);
    expect(await missingDirectories(dir)).toEqual([]);
    // A name too long cannot exist: it and its missing parent are listed.
    expect(await missingDirectories(join(dir, 'p', 'n'.repeat(300)))).toEqual([join(dir, 'p', 'n'.repeat(300)), join(dir, 'p')]);
  });

  it('removes the empty ones it listed; one with a file, and every one above it, is kept', async () => {
    const made = await missingDirectories(join(dir, 'a', 'b', 'c'));
    await mkdir(join(dir, 'a', 'b', 'c'), { recursive: true });
    await writeFile(join(dir, 'a', 'b', 'other'), 'not ours');
    await removeEmptyDirectories(made);
    expect((await readdir(dir, { recursive: true })).sort()).toEqual(['a', join('a', 'b'), join('a', 'b', 'other')]);

    const again = await missingDirectories(join(dir, 'x', 'y'));
    await mkdir(join(dir, 'x', 'y'), { recursive: true });
    await removeEmptyDirectories(again);
    expect(await readdir(dir)).toEqual(['a']);
  });

  it('one that was never made is passed over; its parent still goes', async () => {
    const made = await missingDirectories(join(dir, 'p', 'never'));
    await mkdir(join(dir, 'p'));
    await removeEmptyDirectories(made);
    expect(await readdir(dir)).toEqual([]);
  });
});
