import * as z from 'zod';
import { lazySchema } from '../../../src/core/shared/lazy-schema';

describe('lazySchema', () => {
  it('builds nothing until first use, then builds once', () => {
    const build = jest.fn(() => z.object({ id: z.string() }));
    const schema = lazySchema(build);
    expect(build).not.toHaveBeenCalled();

    expect(schema.parse({ id: 'a' })).toEqual({ id: 'a' });
    expect(schema.safeParse({ id: 1 }).success).toBe(false);
    expect(Object.keys(schema.shape)).toEqual(['id']);
    expect(build).toHaveBeenCalledTimes(1);
  });

  it('behaves as the schema it builds: instanceof, nesting, derived schemas, errors naming the field', () => {
    const inner = lazySchema(() => z.object({ amount: z.int() }));
    const outer = lazySchema(() => z.object({ line: inner, note: z.string().optional() }));

    expect(inner).toBeInstanceOf(z.ZodObject);
    expect(outer.parse({ line: { amount: 3 } })).toEqual({ line: { amount: 3 } });
    const failed = outer.safeParse({ line: { amount: 1.5 } });
    expect(failed.success).toBe(false);
    expect(failed.error?.issues[0]?.path).toEqual(['line', 'amount']);

    const extended = inner.extend({ currency: z.string() });
    expect(extended.parse({ amount: 1, currency: 'EUR' })).toEqual({ amount: 1, currency: 'EUR' });
    expect(inner.optional().parse(undefined)).toBeUndefined();
    expect(z.array(inner).parse([{ amount: 2 }])).toEqual([{ amount: 2 }]);
  });

  it('gives the same JSON Schema as the schema built eagerly', () => {
    const eager = z.object({ id: z.guid(), tags: z.array(z.string()).nullable() });
    const lazy = lazySchema(() => z.object({ id: z.guid(), tags: z.array(z.string()).nullable() }));
    expect(z.toJSONSchema(lazy)).toEqual(z.toJSONSchema(eager));
  });

  it('lets a builder that throws throw again on the next use', () => {
    let calls = 0;
    const schema = lazySchema((): z.ZodString => {
      calls += 1;
      throw new Error('broken schema');
    });
    expect(() => schema.parse('x')).toThrow('broken schema');
    expect(() => schema.parse('x')).toThrow('broken schema');
    expect(calls).toBe(2);
  });
});
