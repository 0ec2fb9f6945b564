import * as z from 'zod';
import { issuesFromZod, issuesText } from '../../../src/core/shared/errors';

/** The issues of a validation as people read them in one line (the CLI's messages). */
describe('issuesText', () => {
  it('names the field, and says a problem of the whole value without "(root)"', () => {
    expect(issuesText([{ path: '', message: 'not valid JSON' }])).toBe('not valid JSON');
    expect(
      issuesText([
        { path: 'companyId', message: 'invalid uuid' },
        { path: 'formats[0]', message: 'expected one of "jsonl", "csv", "parquet"' },
      ]),
    ).toBe('companyId: invalid uuid; formats[0]: expected one of "jsonl", "csv", "parquet"');
  });

  it('reports one issue per field: zod also finds a string "too big" for a list of at most 3, which follows from the first', () => {
    const schema = z.object({ formats: z.array(z.string()).min(1).max(3) });
    const result = schema.safeParse({ formats: 'xlsx' });
    const issues = issuesFromZod(result.error!);
    expect(issues.map((i) => i.path)).toEqual(['formats', 'formats']);
    expect(issuesText(issues)).toBe('formats: expected array');
  });
});

describe('issuesFromZod', () => {
  it("keeps a message the schema gave itself, and words zod's own by the issue's code", () => {
    const schema = z.object({
      arn: z.string().regex(/^arn:/, 'expected an ARN'),
      bare: z.string().regex(/^arn:/),
      size: z.number().max(3, 'at most 3 parts'),
      count: z.number().max(3),
      kind: z.enum(['a', 'b']),
      name: z.string(),
      url: z.url(),
    });
    const result = schema.safeParse({ arn: 'acctops/prod/institution', bare: 'x', size: 4, count: 4, kind: 'c', name: 7, url: 'nope' });
    expect(issuesFromZod(result.error!)).toEqual([
      { path: 'arn', message: 'expected an ARN' },
      { path: 'bare', message: 'invalid regex' },
      { path: 'size', message: 'at most 3 parts' },
      { path: 'count', message: 'too big (maximum 3)' },
      { path: 'kind', message: 'expected one of "a", "b"' },
      { path: 'name', message: 'expected string' },
      { path: 'url', message: 'invalid url' },
    ]);
  });

  it("words zod's wrong-type message by the issue whatever type was received, so the value's type never decides it", () => {
    for (const input of [undefined, null, 7, true, [], {}, 1n, new Date(0)]) {
      const result = z.object({ name: z.string() }).safeParse({ name: input });
      expect(issuesFromZod(result.error!)).toEqual([{ path: 'name', message: 'expected string' }]);
    }
  });
});
