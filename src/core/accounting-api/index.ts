// The public surface of the Accounting API client; see README.md in this folder.
export { AccountingClient, createAccountingClient, type AccountingClientOptions, DEFAULT_MAX_RESPONSE_BYTES } from './client';
export { DataClient, createDataClient } from './data-client';
export { type RetryWait } from './request';
export {
  type Credential,
  type CredentialProvider,
  type AuthScheme,
  apiKeyAuth,
  accessTokenAuth,
  institutionAuth,
  isWellFormedApiKey,
} from './auth';
export {
  AccountingApiError,
  type AccountingApiErrorOptions,
  AuthenticationError,
  KeyExpiredError,
  KeyRevokedError,
  CreatorDisabledError,
  CompanyAccessRemovedError,
  TokenExpiredError,
  TokenRevokedError,
  MalformedApiKeyError,
  InvalidGrantError,
  PermissionDeniedError,
  CompanyMismatchError,
  NotFoundError,
  ConflictError,
  UserExistsError,
  ApiValidationError,
  RateLimitError,
  ServerError,
  ConnectionError,
  TimeoutError,
  ResponseValidationError,
  PaginationError,
  type PaginationFailure,
  ResponseTooLargeError,
  type ErrorBody,
  type ErrorBodyShape,
  type ErrorContextKind,
  CREDENTIAL_CODES,
  USER_REFUSAL_CODES,
  refusesUser,
  readErrorBody,
  errorFromResponse,
  describeRequest,
  parseRetryAfter,
} from './errors';
export { type MinorUnits, MINOR_DIGITS, MoneyFormatError, parseMinorUnits, formatMinorUnits, amountSchema } from './money';
export { PaginatedList, type Page, type PageItem, MAX_PAGE_SIZE, maxPagesFor } from './pagination';
export type { RefreshedPair } from './resources/institution';
export {
  type RetryPolicy,
  type RetrySafety,
  type RetryRecord,
  type GiveUpReason,
  defaultRetryPolicy,
  retryDelayMs,
  retryDecision,
  retryRecordOf,
  isRetryable,
} from './retry';
export {
  type Transport,
  type TransportRequest,
  type TransportResponse,
  type HttpMethod,
  type TransportFailureKind,
  TransportFailure,
  fetchTransport,
  classifyTransportError,
  certificateRefused,
} from './transport';
export { httpTransport } from './http-transport';
export { type ApiKeyPaths, defaultApiKeyPaths } from './resources/api-keys';
export type { AccountingApiWarning, WarningHandler } from './warnings';
export { parseJsonLossless } from './lossless-json';
export { listItemJson, type JsonText } from './item-json';
export { parseTimestamp, epochDayOf, timestampProblem, type TimestampInstant } from './timestamps';
export * from './schemas';
export { jwtExpiry } from './jwt';
