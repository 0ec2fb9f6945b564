import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { importCycles, importGraph } from '../../helpers/import-graph';

const ROOT = resolve(__dirname, '..', '..', '..');

/**
 * No module loads itself back, however lazily: a cycle makes what a module sees of another depend
 * on which one loads first (docs/cli-operations.md). Type-only imports are erased and allowed.
 */
describe('runtime imports', () => {
  it('have no cycle anywhere in the repository', () => {
    const graph = importGraph(ROOT, ['bin', 'cli', 'src', 'functions', 'lib', 'sandbox', 'test', 'bench']);
    // The graph is the repository's: the CLI's port and its lazy loads are in it.
    expect(graph.edges.get('cli/session.ts')).toEqual(expect.any(Set));
    expect([...graph.edges.get('cli/session.ts')!]).toEqual(
      expect.arrayContaining(['cli/operations/local-operations.ts', 'cli/operations/aws-operations.ts']),
    );
    expect(importCycles(graph)).toEqual([]);
  });

  describe('the check', () => {
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'acctops-cycles-'));
      const files: Record<string, string> = {
        // A static import one way, a dynamic import back: a cycle.
        'a.ts': "import { b } from './b';\nexport const a = () => b;\n",
        'b.ts': "export const b = 1;\nexport async function later() { return (await import('./a.ts')).a; }\n",
        // Types only, both ways: erased, no cycle.
        'c.ts': "import type { D } from './d';\nexport interface C { d?: D }\n",
        'd.ts': "import { type C } from './c';\nexport interface D { c?: C }\n",
        // require() one way, a re-export back: a cycle.
        'e.ts': "export const e = () => require('./f');\n",
        'f.ts': "export { e } from './e';\n",
      };
      for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
    });
    afterAll(() => rm(dir, { recursive: true, force: true }));

    it('finds cycles through static, dynamic and require imports and re-exports, and ignores type-only ones', () => {
      const cycles = importCycles(importGraph(dir, ['.']));
      expect(cycles.map((c) => c.join(' ')).sort()).toEqual(['a.ts b.ts', 'e.ts f.ts']);
    });
  });
});
