import { open, rm, type FileHandle } from 'node:fs/promises';
import { CliError } from '../errors';
import { ExitCode } from '../exit-codes';
import { fsCauseText, isFsError, shortPath } from '../fs-failure';

/**
 * The file `acctops local issue-key --out` writes a key to: the one place a key acctops created
 * leaves the process (it is never printed). Created new (`wx`: an existing file, or a symlink, is
 * refused rather than overwritten, since it may be another key or a file the operator needs) and
 * readable by its owner only.
 */
export interface KeyFile {
  readonly path: string;
  /** Writes the key and closes the file. */
  write(apiKey: string): Promise<void>;
  /** Closes and removes the file: nothing was written to it, or what was must not stay. */
  discard(): Promise<void>;
}

/** Creates `path` (absolute) empty with mode 0600, before any key exists, so a refusal leaves nothing behind. */
export async function createKeyFile(path: string): Promise<KeyFile> {
  let handle: FileHandle;
  try {
    handle = await open(path, 'wx', 0o600);
  } catch (error) {
    throw keyFileError(path, error);
  }
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await handle.close();
  };
  try {
    // `open`'s mode passes through the umask, which may only take bits away; 0600 exactly either way.
    await handle.chmod(0o600);
  } catch (error) {
    await close().catch(() => undefined);
    await rm(path, { force: true });
    throw keyFileError(path, error);
  }
  return {
    path,
    write: async (apiKey) => {
      try {
        await handle.writeFile(`${apiKey}\n`, 'utf8');
        await handle.sync();
      } finally {
        await close();
      }
    },
    discard: async () => {
      await close().catch(() => undefined);
      await rm(path, { force: true });
    },
  };
}

/**
 * Exit 3 naming the path (shortened when long, as the state directory's and export's --out are) and
 * the cause in words with its code, never anything the file holds. A path of thousands of
 * characters (ENAMETOOLONG) used to be echoed whole, with the bare code.
 */
function keyFileError(path: string, error: unknown): CliError {
  const shown = shortPath(path);
  if (isFsError(error) && error.code === 'EEXIST') {
    return new CliError(`--out ${shown} already exists; acctops never overwrites a key file`, {
      code: 'out_exists',
      exitCode: ExitCode.config,
      hint: 'name a new file, or move that one away first; no key was created',
      cause: error,
    });
  }
  const cause = isFsError(error) ? fsCauseText(error) : 'an error of the file system';
  return new CliError(`--out ${shown} cannot be created: ${cause}`, {
    code: 'out_not_writable',
    exitCode: ExitCode.config,
    hint: 'name a file in an existing directory you can write; no key was created',
    cause: error,
  });
}
