import { existsSync, readdirSync } from 'node:fs';
import type { Command, Option } from 'commander';
import fc from 'fast-check';
import { Host } from '../../cli/commands/host';
import { commandWord } from '../../cli/errors';
import { buildProgram } from '../../cli/program';
import { CANARY, expectNoCanaries } from '../helpers/canary';
import { cliEnv, tempStateDir } from '../helpers/cli';
import { FUZZ_RUNS, FUZZ_SEED, runCliCaptured } from './support';

/**
 * `acctops` arguments, fuzzed. The option list comes from the program itself, so a new command
 * or option is fuzzed without a change here. What must hold, for any arguments: runCli resolves
 * (never throws); a malformed option value, an unknown command or option, or a credential given as
 * a flag is exit code 2 with one line on stderr that names the option and never repeats the value;
 * nothing is written (the state directory is never created).
 */

interface Target {
  path: string[];
  option: Option;
  parse: (value: string) => unknown;
}

const io = { stdout: { write: () => undefined }, stderr: { write: () => undefined } };

/** Every option of every command whose value goes through one of cli/args.ts's parsers. */
function targets(): Target[] {
  const program = buildProgram(new Host({ io, env: cliEnv({}), cwd: '/' }));
  const out: Target[] = [];
  const walk = (command: Command, path: string[]) => {
    for (const option of command.options) {
      const parse = (option as Option & { parseArg?: (value: string, previous: unknown) => unknown }).parseArg;
      if (parse && option.long && (option.required || option.optional)) out.push({ path, option, parse: (v) => parse(v, undefined) });
    }
    for (const sub of command.commands) walk(sub, [...path, sub.name()]);
  };
  walk(program, []);
  return out;
}

function refuses(target: Target, value: string): boolean {
  try {
    target.parse(value);
    return false;
  } catch {
    return true;
  }
}

/** Values an operator might type, secrets pasted into the wrong place included. */
const value = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.string({ minLength: 500, maxLength: 2000 }),
  fc.constantFrom(
    CANARY.apiKey,
    CANARY.institutionSecret,
    `${CANARY.institutionId}:${CANARY.institutionSecret}`,
    'https://user:pw@example.com/api/v1',
    '2026-13',
    '../../etc',
    's3://',
    '-1',
    '',
  ),
);

describe('acctops arguments (fast-check, fixed seed)', () => {
  let state: { dir: string; remove(): Promise<void> };
  beforeAll(async () => {
    state = await tempStateDir();
  });
  afterAll(async () => {
    await state.remove();
  });

  async function run(args: string[]) {
    const { code, stdout, stderr, stateDir } = await runCliCaptured(state.dir, args);
    expect(existsSync(stateDir)).toBe(false);
    expect(readdirSync(state.dir)).toEqual([]);
    expectNoCanaries(`${stdout}\n${stderr}`, `acctops ${args[0] ?? ''} output`);
    return { code, stdout, stderr };
  }

  it('finds the options to fuzz', () => {
    const found = targets().map((t) => `${t.path.join(' ')} ${t.option.long}`);
    expect(found.length).toBeGreaterThanOrEqual(5);
  });

  it('a malformed option value is exit 2 naming the option, never echoing the value, writing nothing', async () => {
    const all = targets();
    const cases = fc.tuple(fc.constantFrom(...all), value).filter(([target, v]) => refuses(target, v) && !v.startsWith('-'));
    await fc.assert(
      fc.asyncProperty(cases, async ([target, v]) => {
        const { code, stdout, stderr } = await run([...target.path, target.option.long!, v]);
        expect(code).toBe(2);
        expect(stdout).toBe('');
        expect(stderr.trim().split('\n')).toHaveLength(1);
        expect(stderr).toContain(target.option.long!);
        if (v.length >= 8) expect(stderr).not.toContain(v);
      }),
      { seed: FUZZ_SEED, numRuns: FUZZ_RUNS * 2, endOnFailure: true },
    );
  });

  const commandPaths = () => {
    const paths = new Set<string>();
    for (const t of targets()) for (let n = 1; n <= t.path.length; n++) paths.add(t.path.slice(0, n).join(' '));
    return [...paths].map((p) => p.split(' '));
  };
  const word = fc.oneof(fc.string({ maxLength: 15 }), fc.constantFrom('list', 'rotate', 'status', '--json', '-v', CANARY.apiKey));

  it('an unknown command or option is exit 2, names it, and writes nothing', async () => {
    const known = new Set(commandPaths().map((p) => p[0]!));
    const unknownCommand = fc
      .tuple(fc.string({ minLength: 1, maxLength: 15 }), fc.array(word, { maxLength: 3 }))
      .filter(([first]) => !known.has(first) && !first.startsWith('-') && !['help'].includes(first))
      .map(([first, rest]) => ({ args: [first, ...rest], named: first, shown: commandWord(first) }));
    const unknownOption = fc
      .tuple(fc.constantFrom(...commandPaths()), fc.stringMatching(/^--[a-z][a-z-]{2,12}$/))
      .filter(
        ([path, flag]) =>
          !targets().some((t) => t.path.join(' ') === path.join(' ') && t.option.long === flag) &&
          !['--help', '--version', '--json', '--verbose', '--state-dir', '--stack', '--region', '--output'].includes(flag),
      )
      .map(([path, flag]) => ({ args: [...path, flag], named: flag, shown: flag }));
    await fc.assert(
      fc.asyncProperty(fc.oneof(unknownCommand, unknownOption), async ({ args, named, shown }) => {
        const { code, stdout, stderr } = await run(args);
        expect(code).toBe(2);
        expect(stdout).toBe('');
        // Commander names the first problem it meets: the unknown word (an unknown command whole when
        // it cannot be a secret, else by its first 4 characters), or a required option still missing.
        const namesIt = stderr.includes(shown) || /required option '--[a-z-]+/.test(stderr) || named.length >= 40 || /[\s'"]/.test(named);
        expect(namesIt).toBe(true);
        if (shown !== named) expect(stderr).not.toContain(`'${named}'`);
      }),
      { seed: FUZZ_SEED, numRuns: FUZZ_RUNS * 2, endOnFailure: true },
    );
  });

  it('a credential given as a flag, anywhere before --, is refused before anything is parsed, without its value', async () => {
    const flag = fc.constantFrom(
      '--api-key',
      '--apikey',
      '--token',
      '--access-token',
      '--secret',
      '--institution-secret',
      '--password',
      '-key',
      '--Authorization',
    );
    const cases = fc.tuple(
      fc.constantFrom(...commandPaths()),
      fc.array(word, { maxLength: 3 }),
      flag,
      fc.constantFrom(CANARY.apiKey, CANARY.accessToken, CANARY.institutionSecret),
      fc.boolean(),
    );
    await fc.assert(
      fc.asyncProperty(cases, async ([path, rest, name, secret, joined]) => {
        const { code, stdout, stderr } = await run([...path, ...rest, ...(joined ? [`${name}=${secret}`] : [name, secret])]);
        expect(code).toBe(2);
        expect(stdout).toBe('');
        expect(stderr).toMatch(/never takes a credential from a flag/);
        expect(stderr).toContain(name);
      }),
      { seed: FUZZ_SEED, numRuns: FUZZ_RUNS, endOnFailure: true },
    );
  });
});
