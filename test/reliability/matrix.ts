/**
 * The fault matrix: ONE source for the tests in this folder and for the table in
 * docs/reliability.md. Each column's test file hands `matrixColumn` one implementation per cell
 * marked `test`; the harness (./harness.ts) registers them, fails when a cell and its
 * implementation disagree, and `render.ts` writes the table (`npx tsx test/reliability/write-doc.ts`).
 * matrix-doc.test.ts fails when the committed document differs from what this file renders.
 */

export const OUTCOMES = {
  recovered: 'recovered',
  typed_failure: 'clean typed failure, with an event or alarm',
  no_partial_data: 'no partial data visible',
  consistent: 'state consistent afterwards',
} as const;
export type Outcome = keyof typeof OUTCOMES;

export const COLUMNS = {
  tokenRefresh: {
    title: 'Token refresh',
    file: 'token-refresh.test.ts',
    drives: 'TokenLifecycle.refresh against the sandbox, dynalite (token table) and the Secrets Manager emulator (institution secret)',
  },
  keyRotation: {
    title: 'Key rotation',
    file: 'key-rotation.test.ts',
    drives: 'KeyRotation invoked by the Secrets Manager emulator (RotateSecret), against the sandbox',
  },
  monthlyExport: {
    title: 'Monthly export',
    file: 'monthly-export.test.ts',
    drives:
      'one company-month of the monthly run (exportCompanyPeriod with a monthly trigger) against the sandbox and s3rver, keys from the Secrets Manager emulator, user tokens from dynalite',
  },
  webhook: { title: 'Webhook', file: 'webhook.test.ts', drives: 'receiveExportWebhook with its secret in the Secrets Manager emulator' },
} as const;
export type ColumnId = keyof typeof COLUMNS;
export const COLUMN_IDS = Object.keys(COLUMNS) as ColumnId[];

export const ROWS = {
  'rate-limit': '429 with `Retry-After`',
  'status-500': '500',
  'status-502': '502',
  'status-503': '503',
  timeout: 'Timeout',
  reset: 'Connection reset',
  'malformed-json': 'Malformed JSON',
  'drift-missing-field': 'Schema drift: a field we rely on is missing',
  'drift-extra-fields': 'Schema drift: unknown extra fields',
  'drift-unknown-enum': 'Schema drift: an unknown enum value',
  'page-loop': 'Pagination: a loop',
  'page-count-mismatch': 'Pagination: a count mismatch',
  'page-foreign-next': 'Pagination: a `next` that leaves the base URL (another host, outside `/api/v1/`)',
  'page-result-set-change': 'Pagination: the result set changes between pages',
  'page-overlap': 'Pagination: pages overlap (a record sent again, `count` unchanged)',
  'token-expires-mid-export': 'A token expires during an export',
  'key-revoked-mid-export': 'A key is revoked during an export',
  's3-multipart-failure': 'S3 fails in the middle of a multipart upload',
  'secrets-throttling': 'Secrets Manager throttling',
  'dynamodb-conditional': 'DynamoDB conditional-check failure',
  'registry-read-throttled': "DynamoDB throttles the company registry's GetItem",
  'lambda-timeout-rotation': 'A Lambda timeout between rotation steps, then the retry',
} as const;
export type RowId = keyof typeof ROWS;
export const ROW_IDS = Object.keys(ROWS) as RowId[];

export type Cell =
  /** A passing test asserts `outcome`; `shows` is the one line the document prints. */
  | { kind: 'test'; outcome: Outcome; shows: string }
  /** The fault cannot happen to this capability; `reason` says why in one line. */
  | { kind: 'na'; reason: string }
  /** A test.todo until the code it needs lands; the document marks it pending with `reason`. */
  | { kind: 'pending'; outcome: Outcome; shows: string; reason: string };

const test = (outcome: Outcome, shows: string): Cell => ({ kind: 'test', outcome, shows });
const na = (reason: string): Cell => ({ kind: 'na', reason });

const NO_SERVICE_CALL = na(
  'the webhook answers from the signed request alone and calls no service API; the export it enqueues meets this fault in the worker (monthly-export column)',
);
const NO_LIST_TOKENS = na('a refresh calls no list operation; the planner pages the DynamoDB due index, not the service');
const NO_LIST_WEBHOOK = na('the webhook reads no list');

export const MATRIX: Record<RowId, Record<ColumnId, Cell>> = {
  'rate-limit': {
    tokenRefresh: test(
      'recovered',
      'the refresh answered 429 `Retry-After: 2` is sent again after exactly 2 s (client clock); one refresh at the service, record refreshed',
    ),
    keyRotation: test(
      'recovered',
      'key creation answered 429 `Retry-After: 3` is retried after exactly 3 s (429 is safe to repeat); the rotation succeeds with one new key',
    ),
    monthlyExport: test(
      'recovered',
      "page 2 of the transactions answered 429 `Retry-After: 1` is fetched again after 1 s; the manifest holds every record once and the service's exact totals",
    ),
    webhook: NO_SERVICE_CALL,
  },
  'status-500': {
    tokenRefresh: test(
      'recovered',
      '500 on the refresh (it may have rotated the token) is recovered through retrieve; record active, version + 1',
    ),
    keyRotation: test(
      'consistent',
      '500 on key creation (unsafe, not repeated) fails createSecret; rollback leaves AWSCURRENT unchanged and working, no AWSPENDING, no extra live key; a new rotation then succeeds',
    ),
    monthlyExport: test('recovered', '500 on page 2 of the transactions is retried (GET is idempotent); export complete and exact'),
    webhook: NO_SERVICE_CALL,
  },
  'status-502': {
    tokenRefresh: test('recovered', '502 on the refresh is recovered through retrieve; the refreshed user verifies at the service'),
    keyRotation: test('recovered', '502 on the key list is retried; the rotation succeeds with exactly one new key'),
    monthlyExport: test('recovered', '502 on a tax-report page is retried; export complete and exact'),
    webhook: NO_SERVICE_CALL,
  },
  'status-503': {
    tokenRefresh: test(
      'typed_failure',
      '503 on the refresh and on every retrieve: result `failed` (ServerError), metric `TokenRefreshDeferred` (alarmed), record unchanged and still scheduled, lease released',
    ),
    keyRotation: test(
      'typed_failure',
      '503 on `GET /companies/` through every retry in testSecret: no promotion, the pending key revoked, AWSCURRENT unchanged, metric `RotationStepsFailed`',
    ),
    monthlyExport: test(
      'no_partial_data',
      '503 on page 2 through every retry: the previous complete export of the period (manifest and objects) is byte-identical, no object of the failed run remains',
    ),
    webhook: NO_SERVICE_CALL,
  },
  timeout: {
    tokenRefresh: test(
      'recovered',
      "the service holds the refresh past the client's timeout (TimeoutError, ambiguous): recovered through retrieve",
    ),
    keyRotation: test(
      'consistent',
      "key creation held past the client's timeout, the service creates the key afterwards: the rotation is rolled back, the rotation doctor revokes the orphan key; AWSCURRENT unchanged",
    ),
    monthlyExport: test('recovered', "page 2 held past the client's timeout is fetched again; export complete and exact"),
    webhook: test(
      'typed_failure',
      "enqueueing the job times out: 503 `unavailable`, metric `WebhookUnavailable`, the event id is released so the sender's retry is accepted, once",
    ),
  },
  reset: {
    tokenRefresh: test(
      'recovered',
      'connection reset after the service rotated the token (response lost): recovered through retrieve; the service saw one refresh and one retrieve',
    ),
    keyRotation: test(
      'consistent',
      'connection reset after the service created the key: rollback finds the key by its rotation name and revokes it; AWSCURRENT unchanged',
    ),
    monthlyExport: test('recovered', 'connection reset while reading page 2 is retried; export complete and exact'),
    webhook: na("a broken connection to the sender is Lambda's; a failing queue, whatever the cause, is the timeout row's 503"),
  },
  'malformed-json': {
    tokenRefresh: test(
      'recovered',
      'a truncated JSON answer to the refresh (the token rotated) is recovered through retrieve; no half pair stored',
    ),
    keyRotation: test('consistent', 'a truncated answer to key creation (the key exists): rollback revokes it; AWSCURRENT unchanged'),
    monthlyExport: test(
      'no_partial_data',
      'a truncated page fails the attempt (ResponseValidationError, retryable): previous export intact, no object of the run left',
    ),
    webhook: test(
      'typed_failure',
      'a correctly signed body that is not JSON: 400 `body_invalid` naming `(root)`, metric `WebhookRejected`, nothing enqueued',
    ),
  },
  'drift-missing-field': {
    tokenRefresh: test(
      'recovered',
      'a refresh answer without `accessToken` is ResponseValidationError (ambiguous): recovered through retrieve, never a half-stored pair',
    ),
    keyRotation: test(
      'consistent',
      'a creation answer without `key`: the key exists but cannot be used, so rollback revokes it; AWSCURRENT unchanged',
    ),
    monthlyExport: test(
      'typed_failure',
      'transactions without `amount`: ResponseValidationError naming the field; on the last attempt an `ExportFailed` event and metric; no manifest',
    ),
    webhook: test('typed_failure', 'a signed body without `companyId`: 400 naming `companyId`, nothing enqueued, the event id released'),
  },
  'drift-extra-fields': {
    tokenRefresh: test('recovered', 'unknown fields in the refresh answer are ignored; user refreshed'),
    keyRotation: test('recovered', 'unknown fields in the key list and the creation answer are ignored; rotation succeeds'),
    monthlyExport: test(
      'recovered',
      'unknown fields on every transaction are kept verbatim in the raw JSONL and ignored by CSV and Parquet; export complete',
    ),
    webhook: test('typed_failure', 'an unknown member in a signed body: 400 naming it (a typo must not be ignored), nothing enqueued'),
  },
  'drift-unknown-enum': {
    tokenRefresh: na('token answers carry no enum field'),
    keyRotation: na('API-key answers carry no enum field; permission names are compared as strings'),
    monthlyExport: test('recovered', '`cashflowType: TRANSFER` is exported verbatim and totalled as its own type; export complete'),
    webhook: test('typed_failure', '`formats: ["xlsx"]`: 400 naming `formats[0]`, nothing enqueued'),
  },
  'page-loop': {
    tokenRefresh: NO_LIST_TOKENS,
    keyRotation: test(
      'typed_failure',
      "the key list's `next` points at itself: PaginationError `next_loop`, rollback, metric `RotationStepsFailed`, AWSCURRENT unchanged",
    ),
    monthlyExport: test(
      'typed_failure',
      '`next` back to the same page: PaginationError (not retryable), `ExportFailed` event at once, no manifest',
    ),
    webhook: NO_LIST_WEBHOOK,
  },
  'page-count-mismatch': {
    tokenRefresh: NO_LIST_TOKENS,
    keyRotation: test('recovered', 'a wrong `count` on the key list is a logged warning; the list is read whole and the rotation succeeds'),
    monthlyExport: test(
      'no_partial_data',
      '`count` off by one: ExportCountMismatchError; previous export intact, no object of the run left',
    ),
    webhook: NO_LIST_WEBHOOK,
  },
  'page-foreign-next': {
    tokenRefresh: NO_LIST_TOKENS,
    keyRotation: test(
      'typed_failure',
      "the key list's `next` on another host, outside `/api/v1/`: PaginationError `foreign_next`, rollback, `RotationStepsFailed`; the foreign host receives nothing",
    ),
    monthlyExport: test(
      'typed_failure',
      '`next` on another host, outside `/api/v1/`: PaginationError, `ExportFailed` event; the foreign host receives nothing (under `/api/v1/` it would be requested on the base origin: decision 108)',
    ),
    webhook: NO_LIST_WEBHOOK,
  },
  'page-result-set-change': {
    tokenRefresh: NO_LIST_TOKENS,
    keyRotation: na("a company's key list is one page (page size 1000), so nothing can change between its pages"),
    monthlyExport: test(
      'consistent',
      'a record inserted between two pages fails the attempt (count changed); the retry exports every record exactly once with exact totals',
    ),
    webhook: NO_LIST_WEBHOOK,
  },
  'page-overlap': {
    tokenRefresh: NO_LIST_TOKENS,
    keyRotation: na("a company's key list is one page (page size 1000), so no page can repeat another's"),
    monthlyExport: test(
      'consistent',
      'the export completes with every record once and exact totals; the manifest counts the repeat (`duplicatesDropped`)',
    ),
    webhook: NO_LIST_WEBHOOK,
  },
  'token-expires-mid-export': {
    tokenRefresh: na("the refresh is what replaces an expiring token; the export's side is the monthly-export cell"),
    keyRotation: na('rotation acts with API keys, not user tokens'),
    monthlyExport: test(
      'recovered',
      'a user-token export: the access token expires between pages, the refresh worker stores a new pair, the export re-reads it after the 401 and completes exactly',
    ),
    webhook: na('the webhook only enqueues; credentials are used by the worker (monthly-export column)'),
  },
  'key-revoked-mid-export': {
    tokenRefresh: na('token refresh uses the institution credential, not an API key'),
    keyRotation: test(
      'typed_failure',
      'the current key is revoked while createSecret runs: the step fails (KeyRevokedError), no replacement key is left live, metric `RotationStepsFailed`',
    ),
    monthlyExport: test(
      'recovered',
      'the key is rotated and the old one revoked between pages: the consumer re-reads the secret after the 401; export complete and exact',
    ),
    webhook: na('the webhook only enqueues; credentials are used by the worker (monthly-export column)'),
  },
  's3-multipart-failure': {
    tokenRefresh: na('token refresh writes nothing to S3'),
    keyRotation: na('rotation writes nothing to S3'),
    monthlyExport: test(
      'no_partial_data',
      'UploadPart fails on part 2 of the 6.5 MiB transactions CSV (30,000 records): the upload is aborted, the previous complete period is byte-identical, no object of the run remains',
    ),
    webhook: na('the webhook writes nothing to S3'),
  },
  'secrets-throttling': {
    tokenRefresh: test(
      'typed_failure',
      'every read of the institution secret throttled: result `failed`, metric `TokenRefreshDeferred`, record unchanged, lease released; refreshed once throttling ends',
    ),
    keyRotation: test(
      'recovered',
      "GetSecretValue throttled: the SDK's standard retry strategy (the production configuration) absorbs it; rotation succeeds",
    ),
    monthlyExport: test(
      'recovered',
      "the company key secret read throttled: the SDK's standard retry strategy (the production configuration) absorbs it; export complete and exact",
    ),
    webhook: test(
      'typed_failure',
      'the signing secret read throttled: 503 `unavailable` (never a 401 that would make the sender give up), nothing enqueued, no claim kept; the retry is accepted',
    ),
  },
  'dynamodb-conditional': {
    tokenRefresh: test(
      'consistent',
      'a worker whose lease was taken over loses the compare-and-swap: its pair is dropped (`lost_race`, metric `TokenLostRace`), the new holder recovers through retrieve; one active record',
    ),
    keyRotation: na('rotation keeps no DynamoDB state: the staging labels and the ClientRequestToken make it idempotent'),
    monthlyExport: test(
      'consistent',
      "a company in the stage's list that an institution user also reaches: the user's discovery loses the run ledger's conditional put and enqueues nothing; exported once, the run summary counts 1 expected, 1 completed",
    ),
    webhook: test(
      'consistent',
      "two function instances receive the same event at once: one wins the replay guard's conditional put (202), the other gets 409; enqueued once",
    ),
  },
  'registry-read-throttled': {
    tokenRefresh: na('a refresh reads and writes the token table only, never the company registry'),
    keyRotation: na("a rotation step reads no registry entry (the registry's scan is the rotation doctor's, outside this column)"),
    monthlyExport: test(
      'no_partial_data',
      "every GetItem of the company's entry (its `defaultCurrency`) throttled through every attempt of the SDK's default retry strategy: the attempt fails before any request to the service, retryable, the previous complete export byte-identical, its warning line (an attempt the queue retries; decision 110) naming the company and the registry table; the last delivery publishes `ExportFailed` with `errorClass` `ProvisionedThroughputExceededException`; once throttling ends the redelivery completes exact",
    ),
    webhook: test(
      'typed_failure',
      "the allowlist's GetItem throttled through every attempt of the SDK's default retry strategy: 503 `unavailable`, metric `WebhookUnavailable`, nothing enqueued, the event id released; the sender's retry is accepted once throttling ends",
    ),
  },
  'lambda-timeout-rotation': {
    tokenRefresh: na('no multi-step protocol; a worker that dies mid-refresh leaves a lease that runs out (DynamoDB row)'),
    keyRotation: test(
      'consistent',
      "the function dies after setSecret; Secrets Manager's retry (same token) ends with exactly one new key, AWSCURRENT on it, AWSPREVIOUS on the old version",
    ),
    monthlyExport: test(
      'consistent',
      'an export while a rotation is stuck between steps uses AWSCURRENT, never the pending key; after the retry the next export uses the new key',
    ),
    webhook: na('the webhook takes part in no rotation'),
  },
};
