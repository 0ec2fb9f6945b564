import { readdirSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';

/**
 * A process that exits while an atomic write of a private JSON file is under way, as a command
 * does when Ctrl-C's steps are done and a write they did not wait for is still going
 * (test/integration/local/private-json-file.test.ts). The write's rename never completes, so the
 * exit surely lands between the temporary file's creation and its rename.
 */
const [dir] = process.argv.slice(2) as [string];
const promises = createRequire(__filename)('node:fs/promises') as { rename: (...args: unknown[]) => Promise<void> };
promises.rename = () => new Promise<void>(() => undefined);
syncBuiltinESMExports();

void (async () => {
  const { writePrivateJsonFile } = await import('../../src/adapters/local/private-json-file.ts');
  void writePrivateJsonFile(join(dir, 'tokens.json'), { records: { someone: { accessToken: 'eyJ.abandoned.write' } } });
  const poll = setInterval(() => {
    if (readdirSync(dir).some((name) => name.endsWith('.tmp'))) {
      clearInterval(poll);
      process.exit(130);
    }
  }, 5);
})();
