import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..', '..');
/** What the Lambda bundles are made of. */
const SOURCES = ['src', 'functions', 'contract'];

function* typescriptFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* typescriptFiles(path);
    else if (entry.name.endsWith('.ts')) yield path;
  }
}

/**
 * esbuild keeps every module-level call it cannot prove pure, so a `lazySchema(…)` that a bundle
 * never reads stayed in it with its builder. Its `@__NO_SIDE_EFFECTS__` annotation on the function
 * is not honoured across files by esbuild 0.28 (tried: every bundle kept the same bytes); a
 * `/* @__PURE__ *\/` at each call is, and took 1.7 KB off export-period's bundle (decision 114).
 */
describe('lazySchema calls carry /* @__PURE__ */ so that esbuild drops the unread ones', () => {
  it('has no call to lazySchema without the annotation in what the functions bundle', () => {
    const bare: string[] = [];
    let calls = 0;
    for (const dir of SOURCES) {
      for (const file of typescriptFiles(join(ROOT, dir))) {
        // The definition, whose comment shows the annotated call.
        if (file.endsWith('lazy-schema.ts')) continue;
        const source = readFileSync(file, 'utf8');
        for (const match of source.matchAll(/(\/\*\s*[@#]__PURE__\s*\*\/\s*)?\blazySchema\(/g)) {
          calls += 1;
          if (match[1] === undefined) bare.push(`${relative(ROOT, file)}:${source.slice(0, match.index).split('\n').length}`);
        }
      }
    }
    expect(calls).toBeGreaterThan(50);
    expect(bare).toEqual([]);
  });
});
