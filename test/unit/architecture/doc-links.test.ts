import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const ROOT = resolve(__dirname, '..', '..', '..');
/** Generated or installed: not ours to keep true. */
const SKIP = new Set(['node_modules', 'dist', 'cdk.out', 'coverage', '.acctops', '.bench-out', '.git']);

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (SKIP.has(entry.name)) return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return markdownFiles(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

/**
 * The documentation travels with a clone and nothing else: a link, or a path a reader is sent to,
 * that leaves the repository is broken for everyone who reads it elsewhere (the service's own API
 * description, kept beside the repository where it was written, was one such).
 */
describe('documentation links stay inside the repository', () => {
  const files = markdownFiles(ROOT);

  it('finds the documentation', () => {
    expect(files.map((f) => relative(ROOT, f))).toEqual(expect.arrayContaining(['README.md', join('docs', 'runbooks.md')]));
  });

  it('every relative link resolves to a file or folder of the repository', () => {
    const broken: string[] = [];
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = match[1]!.split('#')[0]!;
        if (target === '' || /^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
        const path = resolve(dirname(file), target);
        const inside = path === ROOT || path.startsWith(ROOT + sep);
        if (!inside || !existsSync(path)) broken.push(`${relative(ROOT, file)}: ${match[1]!}${inside ? '' : ' (outside the repository)'}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('no document names a path above the repository', () => {
    const outside = files.flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/`\.\.\/shared\/[^`]*`|\/work\/shared\//g)].map((m) => `${relative(ROOT, file)}: ${m[0]}`),
    );
    expect(outside).toEqual([]);
  });
});
