import * as z from 'zod';
import { TAX_REPORT_FIELDS, type TaxReportField, type TaxReportFieldNames } from '../../../../contract/exports';
import { ignoredFieldsOf, taxReportSchema, type TaxReport } from '../../accounting-api';
import { issuesFromZod, ValidationError } from '../../shared/errors';
import { lazySchema } from '../../shared/lazy-schema';

export { TAX_REPORT_FIELDS, type TaxReportField, type TaxReportFieldNames };

/** A field name as a JSON object key may spell it; `pk` stays `pk` (the spec names it). */
const fieldName = lazySchema(() =>
  z
    .string()
    .min(1)
    .max(128)
    .refine((name) => name !== 'pk', 'pk is the report id (spec §2), not one of its fields'),
);

/**
 * The mapping of our tax-report fields to the service's names: keys among TAX_REPORT_FIELDS, each
 * service name used once. An empty mapping is no mapping.
 */
export const taxReportFieldsSchema = lazySchema(() =>
  z
    .strictObject(
      Object.fromEntries(TAX_REPORT_FIELDS.map((field) => [field, fieldName.optional()])) as Record<
        TaxReportField,
        z.ZodOptional<z.ZodString>
      >,
    )
    .superRefine((names, ctx) => {
      const seen = new Map<string, string>();
      for (const [ours, theirs] of Object.entries(names)) {
        if (theirs === undefined) continue;
        const other = seen.get(theirs);
        if (other !== undefined) ctx.addIssue({ code: 'custom', path: [ours], message: `${theirs} is already the name of ${other}` });
        seen.set(theirs, ours);
      }
    }),
);

/**
 * `periodEnd=endDate,periodStart=startDate`, as `acctops export --tax-report-fields` takes it, to a
 * mapping; ValidationError naming the pair or the field at fault.
 */
export function parseTaxReportFieldList(text: string): TaxReportFieldNames {
  const entries: [string, string][] = [];
  for (const pair of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const at = pair.indexOf('=');
    if (at <= 0 || at === pair.length - 1) {
      throw new ValidationError('tax report fields', [{ path: pair, message: 'expected ours=theirs, e.g. periodEnd=endDate' }]);
    }
    entries.push([pair.slice(0, at).trim(), pair.slice(at + 1).trim()]);
  }
  return parseTaxReportFields(Object.fromEntries(entries));
}

/** A mapping from configuration (the environment's JSON, cdk.json) checked; ValidationError names the field. */
export function parseTaxReportFields(value: unknown): TaxReportFieldNames {
  const parsed = taxReportFieldsSchema.safeParse(value);
  if (!parsed.success) throw new ValidationError('tax report fields', issuesFromZod(parsed.error));
  return parsed.data;
}

/**
 * A tax report read with the service's names: each of our fields from the field the mapping names
 * (absent there: null), the rest from our own names, through the client's schema; a field that
 * fails it is a ValidationError naming the service's field.
 */
export function taxReportWithNames(raw: unknown, names: TaxReportFieldNames, index: number): TaxReport {
  const fields = (raw !== null && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const renamed: Record<string, unknown> = { pk: fields.pk };
  for (const field of TAX_REPORT_FIELDS) renamed[field] = fields[names[field] ?? field];
  const parsed = taxReportSchema.safeParse(renamed);
  const id = typeof fields.pk === 'string' && fields.pk.length <= 64 ? fields.pk : `at position ${index}`;
  if (!parsed.success) {
    const issues = issuesFromZod(parsed.error).map((issue) => ({ ...issue, path: names[issue.path as TaxReportField] ?? issue.path }));
    throw new ValidationError(`tax report ${id}`, issues);
  }
  // The client reads a malformed optional field as absent (the spec does not promise it). A field
  // the operator named is promised: a value it cannot read is an error naming that field.
  const refused = [...ignoredFieldsOf(parsed.data)].filter((field) => names[field as TaxReportField] !== undefined) as TaxReportField[];
  if (refused.length > 0) {
    throw new ValidationError(
      `tax report ${id}`,
      refused.map((field) => ({ path: names[field]!, message: `expected ${EXPECTED[field]} (configured as ${field})` })),
    );
  }
  return parsed.data;
}

const EXPECTED: Record<TaxReportField, string> = {
  type: 'a report type',
  periodStart: 'a date YYYY-MM-DD',
  periodEnd: 'a date YYYY-MM-DD',
  status: 'a report status',
  amountDue: 'an amount (integer minor units or a decimal string)',
  currency: 'a currency code',
  createdAt: 'an ISO 8601 timestamp with an offset',
};

const knownByNames = new WeakMap<TaxReportFieldNames, ReadonlySet<string>>();

/** The service's field names the tax_reports columns hold, so that `extra` keeps only the others. */
export function taxReportColumnSources(names: TaxReportFieldNames | undefined): ReadonlySet<string> {
  if (names === undefined) return OWN_NAMES;
  let known = knownByNames.get(names);
  if (known === undefined) {
    known = new Set(['pk', ...TAX_REPORT_FIELDS.map((field) => names[field] ?? field)]);
    knownByNames.set(names, known);
  }
  return known;
}

const OWN_NAMES: ReadonlySet<string> = new Set(['pk', ...TAX_REPORT_FIELDS]);
