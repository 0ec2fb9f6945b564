import type * as z from 'zod';

/**
 * A module-level zod schema that is built on its first use rather than when its module loads.
 *
 * Why: zod 4 builds every schema eagerly, about 0.1 ms an instance on a Lambda-sized CPU, and a
 * bundle carries the schemas of every module it imports, needed or not (esbuild cannot drop a
 * call it does not know is pure, and a class keeps all its methods). export-period built 818
 * instances at init, ~18% of its module init, half of them for paths it rarely or never takes (the
 * token store's writes, key rotation, split jobs, the part ledger). Built on first use, an
 * invocation pays only for the schemas its path parses, once per execution environment. The
 * client's response schemas are the exception, built at load: every path parses with them
 * (decision 43 in docs/architecture.md).
 *
 * The value is a Proxy with the schema's own type: `parse`, `.shape`, `.extend()`, `instanceof`,
 * nesting in other schemas and JSON Schema generation all reach the one built instance. It is
 * built at most once; a builder that throws throws again on the next use.
 *
 * Every module-level call is written `/* @__PURE__ *\/ lazySchema(…)`: with it esbuild drops a
 * schema no code of the bundle reads, builder and all (decision 114;
 * test/unit/architecture/pure-annotations.test.ts keeps the calls annotated).
 */
export function lazySchema<T extends z.core.$ZodType>(build: () => T): T {
  let built: T | undefined;
  const schema = (): T => (built ??= build());
  // The proxy's own target is an empty extensible object: every trap answers for the built schema,
  // and descriptors are reported configurable, which the Proxy invariants require of properties the
  // target itself does not have.
  return new Proxy({} as T, {
    get: (_target, key) => Reflect.get(schema(), key),
    set: (_target, key, value) => Reflect.set(schema(), key, value),
    has: (_target, key) => Reflect.has(schema(), key),
    ownKeys: () => Reflect.ownKeys(schema()),
    getOwnPropertyDescriptor: (_target, key) => {
      const descriptor = Reflect.getOwnPropertyDescriptor(schema(), key);
      return descriptor === undefined ? undefined : { ...descriptor, configurable: true };
    },
    defineProperty: (_target, key, descriptor) => Reflect.defineProperty(schema(), key, descriptor),
    deleteProperty: (_target, key) => Reflect.deleteProperty(schema(), key),
    getPrototypeOf: () => Reflect.getPrototypeOf(schema()),
  });
}
