import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..', '..');
/**
 * What the Lambda bundles are made of, minified without esbuild's keepNames, and the CLI, the
 * sandbox and the stack, whose errors share the root class and the rule.
 */
const SOURCES = ['src', 'functions', 'contract', 'cli', 'sandbox', 'lib'];

const CLASS = /^(?:export )?(?:abstract )?class (\w+) extends (\w+)[^{]*\{/gm;

/**
 * Error classes of `source` that do not declare their own name as a string literal: a minified
 * class's `name` is a letter or two, and `error.name` is what logs, events and the CLI show.
 */
function unnamedErrorClasses(source: string): string[] {
  const missing: string[] = [];
  for (const match of source.matchAll(CLASS)) {
    const [, name, base] = match as unknown as [string, string, string];
    if (!/(Error|Failure)$/.test(name) && !/Error$/.test(base)) continue;
    // The class body: up to its closing brace at the start of a line (the formatter's layout).
    const from = match.index + match[0].length;
    const close = source.indexOf('\n}', from);
    const body = source.slice(from, close === -1 ? undefined : close);
    // The declaration comes first in the body, or the constructor assigns it.
    const declared =
      new RegExp(`^\\s*(?:/\\*\\*[^]*?\\*/\\s*)?override readonly name: string = '${name}';`).test(body) ||
      body.includes(`this.name = '${name}';`);
    // A constructor that sets another name after the declaration wins at run time.
    const other = [...body.matchAll(/this\.name = '(\w+)'/g)].some((m) => m[1] !== name);
    if (!declared || other) missing.push(name);
  }
  return missing;
}

function typescriptFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return typescriptFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

describe('error class names', () => {
  it('are declared as strings by every error class, above all those the Lambda bundles hold', () => {
    const files = SOURCES.flatMap((dir) => typescriptFiles(join(ROOT, dir)));
    const missing = files.flatMap((file) =>
      unnamedErrorClasses(readFileSync(file, 'utf8')).map((name) => `${relative(ROOT, file)}: ${name}`),
    );
    expect(missing).toEqual([]);
    // The scan sees the classes at all: the root and a leaf of the client's hierarchy.
    const named = files.flatMap((file) => [...readFileSync(file, 'utf8').matchAll(CLASS)].map((m) => m[1]));
    expect(named).toEqual(expect.arrayContaining(['AcctopsError', 'KeyExpiredError', 'TransportFailure', 'StateLockedError']));
  });

  describe('the check', () => {
    it('finds a class without its name, with another class name, or renamed by its constructor', () => {
      const source = [
        'export class AError extends AcctopsError {',
        "  override readonly name: string = 'AError';",
        '}',
        'export class BError extends AError {',
        '  constructor() { super(); }',
        '}',
        'class CFailure extends Error {',
        "  override readonly name: string = 'AError';",
        '}',
        'class DError extends Error {',
        "  override readonly name: string = 'DError';",
        "  constructor() { super(); this.name = 'DoubleError'; }",
        '}',
        'class Plain extends Base {}',
      ].join('\n');
      expect(unnamedErrorClasses(source)).toEqual(['BError', 'CFailure', 'DError']);
    });
  });
});
