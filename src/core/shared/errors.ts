import * as z from 'zod';
import { redactString } from './redact';

/**
 * Root of every error acctops raises on purpose. `code` is stable and machine-readable.
 *
 * Every error class declares its `name` as a string, since the Lambda bundles are minified without
 * esbuild's `keepNames` (a class's own name would be `e`); test/unit/architecture/error-names.test.ts holds it.
 */
export class AcctopsError extends Error {
  override readonly name: string = 'AcctopsError';
  readonly code: string;

  constructor(message: string, options: { code: string; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
  }
}

export interface FieldIssue {
  /** Dotted path of the offending field, e.g. `detail.companyId` or `results[3].amount`. */
  path: string;
  message: string;
}

/**
 * Bad input: an event, an API response, a config value or a CLI argument. The message names the
 * field; it never echoes the value, which may be a secret.
 */
export class ValidationError extends AcctopsError {
  override readonly name: string = 'ValidationError';
  readonly issues: FieldIssue[];
  readonly source: string;

  constructor(source: string, issues: FieldIssue[], cause?: unknown) {
    const summary = issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ');
    super(`invalid ${source}: ${summary}`, { code: 'validation_failed', cause });
    this.source = source;
    this.issues = issues;
  }

  /** The first offending field: what a one-line error shows. */
  get field(): string {
    return this.issues[0]?.path ?? '';
  }
}

/** Configuration (env vars, stage settings) that is missing or malformed: fail fast at start. */
export class ConfigError extends ValidationError {
  override readonly name: string = 'ConfigError';
  constructor(issues: FieldIssue[], cause?: unknown) {
    super('configuration', issues, cause);
    Object.defineProperty(this, 'code', { value: 'config_invalid' });
  }
}

/**
 * Issues as one clause for people: `field: problem`, joined by `; `; a problem of the whole value
 * (path `''`: text that is not JSON, a credential of the wrong shape) without a field name; and
 * one issue per field, the first. zod goes on checking a value of the wrong type, so a string where
 * a list of at most 3 was expected is also "too big (maximum 3)": the second only follows from the
 * first.
 */
export function issuesText(issues: readonly FieldIssue[]): string {
  const fields = new Set<string>();
  return issues
    .filter((issue) => !fields.has(issue.path) && fields.add(issue.path))
    .map((issue) => (issue.path ? `${issue.path}: ${issue.message}` : issue.message))
    .join('; ');
}

export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out ? `.${String(part)}` : String(part);
  }
  return out;
}

/**
 * A field name as an issue shows it. The input chose its names, so an unknown field or a record's
 * key may be a secret pasted in the wrong place (`{"sbx_…": 1}`), and the issue goes into the
 * error's message, the log line and Lambda's own report of the failure. A name of at most 128
 * identifier characters is shown through redactString (a key cut to its prefix, a JWT replaced);
 * anything else, which no schema of ours names, as `[REDACTED]`.
 */
const FIELD_NAME = /^[A-Za-z0-9_$@:.-]{1,128}$/;
function shownName<P extends PropertyKey>(name: P): P | string {
  if (typeof name !== 'string') return name;
  return FIELD_NAME.test(name) ? redactString(name) : '[REDACTED]';
}

/**
 * zod's messages can quote the received value (an enum mismatch says what it got); we keep only
 * the issue code and expectation so that a secret in a bad field never reaches a log. A message the
 * schema gave itself (`regex(ARN, 'expected an ARN')`) is ours and kept: it says more than the code.
 */
export function issuesFromZod(error: z.ZodError, prefix = ''): FieldIssue[] {
  return error.issues.map((issue) => {
    const path = formatPath([...(prefix ? [prefix] : []), ...issue.path.map(shownName)]);
    if (issue.code !== 'custom' && !isZodsOwnMessage(issue)) return { path, message: issue.message };
    let message: string;
    switch (issue.code) {
      case 'invalid_type':
        message = `expected ${issue.expected}`;
        break;
      case 'invalid_value':
        message = `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
        break;
      case 'unrecognized_keys':
        message = `unknown field(s) ${issue.keys.map(shownName).join(', ')}`;
        break;
      case 'too_big':
        message = `too big (maximum ${String(issue.maximum)})`;
        break;
      case 'too_small':
        message = `too small (minimum ${String(issue.minimum)})`;
        break;
      case 'invalid_format':
        message = `invalid ${issue.format}`;
        break;
      case 'custom':
        // A check of ours (refine, superRefine, a transform's issue): its message is ours, never a value.
        message = issue.message;
        break;
      default:
        message = issue.code.replace(/_/g, ' ');
    }
    return { path, message };
  });
}

// A wrong type's message names the type received, which the finished issue no longer carries: a
// value of each type zod names stands in for it.
const RECEIVED = [
  undefined,
  null,
  '',
  0,
  Number.NaN,
  true,
  0n,
  Symbol(),
  () => {},
  [],
  {},
  new Date(),
  new Map(),
  new Set(),
  Promise.resolve(),
];

/**
 * Whether `issue.message` is the one zod's locale would write, rather than the schema's own: the
 * finished issue does not say which. Read from the global config rather than a copy of zod's
 * wording, so a zod upgrade that rewords its messages does not turn them into "ours".
 */
function isZodsOwnMessage(issue: z.core.$ZodIssue): boolean {
  const locale = z.config().localeError;
  if (locale === undefined) return true;
  const worded = (candidate: z.core.$ZodRawIssue): string | undefined => {
    const out = locale(candidate);
    return typeof out === 'string' ? out : out?.message;
  };
  if (issue.code !== 'invalid_type') return worded(issue as z.core.$ZodRawIssue) === issue.message;
  return RECEIVED.some((input) => worded({ ...issue, input } as z.core.$ZodRawIssue) === issue.message);
}

/** Parses `input` with `schema`, or throws a ValidationError that names each bad field. */
export function parseWith<S extends z.ZodType>(schema: S, input: unknown, source: string): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw new ValidationError(source, issuesFromZod(result.error));
}

/**
 * `text` as JSON, validated with `schema`: text that is not JSON is a ValidationError at `(root)`,
 * with no cause, since JSON.parse's message quotes the text around the fault (a queued body, a
 * state file: either may hold a token).
 */
export function parseJsonWith<S extends z.ZodType>(schema: S, text: string, source: string): z.output<S> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ValidationError(source, [{ path: '', message: 'not valid JSON' }]);
  }
  return parseWith(schema, value, source);
}
