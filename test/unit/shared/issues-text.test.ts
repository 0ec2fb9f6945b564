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
