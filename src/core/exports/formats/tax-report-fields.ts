import * as z from 'zod';
import { TAX_REPORT_FIELDS, taxReportFieldNameIssues, type TaxReportField, type TaxReportFieldNames } from '../../../../contract/exports';
import { ignoredFieldsOf, taxReportSchema, type TaxReport } from '../../accounting-api';
import { issuesFromZod, ValidationError } from '../../shared/errors';
import { lazySchema } from '../../shared/lazy-schema';

export { TAX_REPORT_FIELDS, type TaxReportField, type TaxReportFieldNames };

/**
 * The mapping of our tax-report fields to the service's names, checked by contract's
 * taxReportFieldNameIssues as the stage schema is. An empty mapping is no mapping.
 */
export const taxReportFieldsSchema = /* @__PURE__ */ lazySchema(() =>
  z.unknown().transform((value, ctx): TaxReportFieldNames => {
    for (const { field, message } of taxReportFieldNameIssues(value)) ctx.addIssue({ code: 'custom', path: field ? [field] : [], message });
    return value as TaxReportFieldNames;
  }),
);

/**
 * `periodEnd=endDate,periodStart=startDate`, as `acctops export --tax-report-fields` takes it, to a
 * mapping; ValidationError naming the pair or the field at fault.
 */
export function parseTaxReportFieldList(text: string): TaxReportFieldNames {
  const entries: [string, string][] = [];
  const pairs = text.split(',').map((s) => s.trim());
  // Paths name a pair by its position, never by its text: the list is the operator's input.
  pairs.forEach((pair, i) => {
    const at = pair.indexOf('=');
    const ours = pair.slice(0, at).trim();
    if (at <= 0 || at === pair.length - 1) {
      throw new ValidationError('tax report fields', [{ path: `pair ${i + 1}`, message: 'expected ours=theirs, e.g. periodEnd=endDate' }]);
    }
    if (entries.some(([field]) => field === ours))
      throw new ValidationError('tax report fields', [{ path: `pair ${i + 1}`, message: 'names a field given before' }]);
    entries.push([ours, pair.slice(at + 1).trim()]);
  });
  // fromEntries defines each name as an own member: an assignment of `__proto__=x` set the
  // object's prototype instead, so the pair vanished and the list was accepted as empty.
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
 * fails it is a ValidationError naming the service's field. A name with dots reaches into nested
 * objects (`period.from`, for a service that nests the period), unless the report has a field of
 * that whole name, which wins.
 */
export function taxReportWithNames(raw: unknown, names: TaxReportFieldNames, index: number): TaxReport {
  const fields = (raw !== null && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const renamed: Record<string, unknown> = { pk: fields.pk };
  for (const field of TAX_REPORT_FIELDS) {
    const name = names[field] ?? field;
    const value = Object.hasOwn(fields, name) ? fields[name] : name.includes('.') ? valueAtPath(fields, name) : undefined;
    // An empty string under a named field is no value, as null is: it neither fails nor places.
    renamed[field] = names[field] !== undefined && value === '' ? null : value;
  }
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

/** The value at a dotted path of own fields of plain objects (no arrays), or undefined. */
function valueAtPath(fields: Record<string, unknown>, path: string): unknown {
  let at: unknown = fields;
  for (const segment of path.split('.')) {
    if (at === null || typeof at !== 'object' || Array.isArray(at) || !Object.hasOwn(at, segment)) return undefined;
    at = (at as Record<string, unknown>)[segment];
  }
  return at;
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
