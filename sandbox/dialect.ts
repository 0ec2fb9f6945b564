import type { SandboxApiError } from './errors';
import { hashString } from './random';
import type { Company, TaxReportRecord } from './state';
import { amountOnWire, labelOnWire, type WireSettings } from './views';

/**
 * The sandbox's dialects: two shapes of one service over the same state. `default` is the shape of
 * docs/assumptions.md and docs/openapi.yaml. `minimal` answers with only what the spec promises, in
 * the shapes a Django REST framework + simplejwt service would plausibly use (docs/assumptions.md,
 * "The minimal dialect"): it exists so that the client is tested against a service that was not
 * written to it. Handlers keep one logic; this module only shapes what they answer.
 */

export { DIALECTS, type Dialect } from './choices';

/** What simplejwt answers for any token it will not accept (refresh, verify, expire, bearer). */
export const TOKEN_NOT_VALID = { detail: 'Token is invalid or expired', code: 'token_not_valid' } as const;

export interface DialectError {
  status: number;
  body: Record<string, unknown>;
}

/**
 * A refusal in DRF's shapes: `{"detail", "code"}`, or `{"<field>": ["message"]}` for a bad field.
 * Status codes follow DRF + simplejwt: a refused token is 401 `token_not_valid` (the default
 * dialect's 400 `invalid_grant`), everything else keeps its status.
 */
export function drfError(error: SandboxApiError): DialectError {
  const detail = (text: string, code: string) => ({ detail: text, code });
  switch (error.type) {
    case 'validation_error':
      if (error.cause instanceof SyntaxError) return { status: 400, body: detail(`JSON parse error - ${error.message}`, 'parse_error') };
      if (error.param !== null && error.param !== 'body') return { status: error.status, body: { [error.param]: [error.message] } };
      return { status: error.status, body: detail(error.message, 'invalid') };
    case 'invalid_grant':
      return { status: 401, body: { ...TOKEN_NOT_VALID } };
    case 'authentication_error':
      return { status: 401, body: authenticationDetail(error) };
    case 'permission_error':
    case 'company_mismatch_error':
      return {
        status: 403,
        body: detail(
          error.type === 'permission_error' ? 'You do not have permission to perform this action.' : error.message,
          'permission_denied',
        ),
      };
    case 'not_found_error':
      return { status: 404, body: detail(error.message === 'Invalid page.' ? 'Invalid page.' : 'Not found.', 'not_found') };
    case 'rate_limit_error': {
      const seconds = error.headers['Retry-After'] ?? '1';
      return { status: 429, body: detail(`Request was throttled. Expected available in ${seconds} seconds.`, 'throttled') };
    }
    case 'method_not_allowed_error':
      return { status: 405, body: detail(error.message, 'method_not_allowed') };
    case 'payload_too_large_error':
      return { status: 413, body: detail(error.message, 'request_too_large') };
    case 'api_error':
      return { status: error.status, body: detail('A server error occurred.', 'error') };
    default:
      return { status: error.status, body: detail(error.message, error.code) };
  }
}

function authenticationDetail(error: SandboxApiError): Record<string, unknown> {
  switch (error.code) {
    case 'missing_credentials':
      return { detail: 'Authentication credentials were not provided.', code: 'not_authenticated' };
    case 'token_invalid':
    case 'token_expired':
    case 'token_revoked':
      return { detail: 'Given token not valid for any token type', code: 'token_not_valid' };
    case 'user_disabled':
      return { detail: 'User is inactive', code: 'user_inactive' };
    default:
      return { detail: error.message, code: 'authentication_failed' };
  }
}

/** The company in the minimal dialect: other names, no list envelope around it (routes.ts). */
export const minimalCompanyView = (c: Company) => ({
  publicId: c.publicId,
  companyName: c.name,
  countryCode: c.country,
  defaultCurrency: c.currency,
});

/**
 * An API key in the minimal dialect: the prefix under another name (spec §5.1.2 says "the key
 * prefix", not its field), so that the client's reading of the spellings is exercised. The name
 * stays: rotation recognises its keys by it (docs/key-rotation.md).
 */
export const minimalApiKeyView = <K extends { prefix: string }>(view: K) => {
  const { prefix, ...rest } = view;
  return { ...rest, keyPrefix: prefix };
};

/**
 * The minimal dialect's name for each tax-report field of the default dialect (the exports' own
 * names): what `acctops export --tax-report-fields` says for it, and what the local mode's exports
 * of a minimal-dialect state use when it is not given (cli/operations/export-run.ts).
 */
export const MINIMAL_TAX_REPORT_FIELDS = {
  type: 'reportType',
  periodStart: 'startDate',
  periodEnd: 'endDate',
  status: 'state',
  amountDue: 'totalAmount',
  currency: 'currencyCode',
  createdAt: 'created',
} as const;

/** A tax report in the minimal dialect: `pk` is the one name the spec gives; every other name differs (MINIMAL_TAX_REPORT_FIELDS). */
export const minimalTaxReportView = (r: TaxReportRecord, s: WireSettings) => ({
  pk: r.pk,
  [MINIMAL_TAX_REPORT_FIELDS.type]: 'VAT_RETURN',
  [MINIMAL_TAX_REPORT_FIELDS.periodStart]: r.periodStart,
  [MINIMAL_TAX_REPORT_FIELDS.periodEnd]: r.periodEnd,
  [MINIMAL_TAX_REPORT_FIELDS.status]: labelOnWire(r.status, hashString(r.pk), s),
  [MINIMAL_TAX_REPORT_FIELDS.amountDue]: amountOnWire(r.amountDue, hashString(r.pk), s),
  [MINIMAL_TAX_REPORT_FIELDS.currency]: r.currency,
  [MINIMAL_TAX_REPORT_FIELDS.createdAt]: new Date(r.createdAt).toISOString(),
});
