import { join } from 'node:path';
import fc from 'fast-check';
import { runCli } from '../../cli/program';
import { cliEnv } from '../helpers/cli';

/** Every fuzz test runs with this seed: a failure is reproduced by running the suite again. */
export const FUZZ_SEED = 20261101;
/** Runs per property: enough to walk every generator branch, small enough for two cores. */
export const FUZZ_RUNS = 60;

type Kind = 'string' | 'number' | 'boolean' | 'array' | 'object';

/** A value that is not of `kind` (null, undefined and the other JSON types). */
export function wrongType(kind: Kind): fc.Arbitrary<unknown> {
  const all: Record<Kind, fc.Arbitrary<unknown>> = {
    string: fc.string({ maxLength: 20 }),
    number: fc.oneof(fc.integer(), fc.double({ noNaN: true })),
    boolean: fc.boolean(),
    array: fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }),
    object: fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }),
  };
  const others = (Object.keys(all) as Kind[]).filter((k) => k !== kind && !(kind === 'object' && k === 'array')).map((k) => all[k]);
  return fc.oneof(fc.constant(null), ...others);
}

/** Any string except the allowed ones, or another type. */
export function notA(...allowed: string[]): fc.Arbitrary<unknown> {
  return fc.oneof(
    wrongType('string'),
    fc.string({ maxLength: 30 }).filter((s) => !allowed.includes(s)),
    fc.constantFrom(...allowed.map((a) => a.toUpperCase())).filter((s) => !allowed.includes(s)),
  );
}

/** A field name that is none of `existing`. */
export function unknownKey(existing: readonly string[]): fc.Arbitrary<string> {
  return fc
    .stringMatching(/^[a-zA-Z][a-zA-Z0-9_]{0,15}$/)
    .filter((k) => !existing.includes(k) && !['__proto__', 'constructor', 'prototype'].includes(k));
}

/**
 * `acctops …` in this process with its output captured, env and cwd of the test's own, and a state
 * directory under `root` that a refused command must never create (`stateDir` is where it would be).
 */
export async function runCliCaptured(
  root: string,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string; stateDir: string }> {
  let stdout = '';
  let stderr = '';
  const stateDir = join(root, 'never-created');
  const code = await runCli(['--state-dir', stateDir, ...args], {
    io: { stdout: { write: (t: string) => (stdout += t) }, stderr: { write: (t: string) => (stderr += t) } },
    env: cliEnv({}),
    cwd: root,
  });
  return { code, stdout, stderr, stateDir };
}
