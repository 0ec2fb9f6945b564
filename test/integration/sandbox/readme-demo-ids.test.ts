import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startSandbox } from '../../../sandbox';

/**
 * README's "Quickstart by role" pastes a demo company's id, which only holds while the local mode's
 * seed (cli/local/local-world.ts, seed 1) makes that company: a change to the seed or to the demo's
 * companies would leave every pasted command of the quickstart pointing at a company that is not there.
 */
describe("README's quickstart names a company the demo makes", () => {
  it('the `company=` line is the id and the name the seeded demo gives Demo Bakery GmbH', async () => {
    const readme = await readFile(join(__dirname, '..', '..', '..', 'README.md'), 'utf8');
    const line = /^company=([0-9a-f-]{36})\s+# (.+?),/m.exec(readme);
    expect(line).not.toBeNull();
    const sandbox = await startSandbox({ port: 0, seed: 1, demo: true, seededCredentials: false });
    try {
      const companies = sandbox.demo?.companies.map((c) => ({ publicId: c.publicId, name: c.name })) ?? [];
      expect(companies).toContainEqual({ publicId: line![1], name: line![2] });
    } finally {
      await sandbox.stop();
    }
  });
});
