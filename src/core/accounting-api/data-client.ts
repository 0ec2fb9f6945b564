import { INSECURE_HTTP_REASON, insecureHttp } from '../../../contract/setting-rules';
import { type Clock, systemClock } from '../shared/clock';
import { ConfigError } from '../shared/errors';
import { type Logger, silentLogger } from '../shared/logger';
import type { CredentialProvider } from './auth';
import { MAX_PAGE_SIZE, resolvePageSize } from './pagination';
import { RequestEngine, type RetryWait } from './request';
import { ApiKeysResource, type ApiKeyPaths, resolveApiKeyPaths } from './resources/api-keys';
import { CategoriesResource } from './resources/categories';
import { CompaniesResource, TaxReportsResource } from './resources/companies';
import { TransactionsResource } from './resources/transactions';
import { type RetryPolicy, defaultRetryPolicy } from './retry';
import { httpTransport } from './http-transport';
import type { Transport } from './transport';
import type { WarningHandler } from './warnings';

export interface AccountingClientOptions {
  /**
   * Includes the version prefix: `https://accounting.example.com/api/v1`, or `http://127.0.0.1:4010/api/v1`
   * on loopback. `next` links must stay under it (its scheme included). Plain `http` to any other host
   * is refused (ConfigError on `baseUrl`) unless `allowInsecureHttp` is set.
   */
  baseUrl: string;
  /**
   * Let `baseUrl` be plain `http` to a host that is not loopback: every request's credential (the
   * API key, the institution credential, a token) then crosses the network in clear. For a service
   * container on a trusted private network only; the caller must say so to its user (the CLI's
   * `--allow-insecure-http` prints a warning). Default false.
   */
  allowInsecureHttp?: boolean;
  credentials: CredentialProvider;
  /**
   * The company this client acts for. Sent as `X-Company-Id` on every non-institution request
   * (a user token with several companies needs it) and enforced as the scope: any other company
   * id in a path, body or header is refused before sending.
   */
  companyId?: string;
  /** Default: `httpTransport()`, on Node's own HTTP client (`fetchTransport` takes a `fetch` instead). */
  transport?: Transport;
  /** Per attempt, connect to end of body. Default 30 s. */
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  clock?: Clock;
  /** In [0, 1); jitter for the backoff. Default Math.random. */
  random?: () => number;
  logger?: Logger;
  onWarning?: WarningHandler;
  apiKeyPaths?: Partial<ApiKeyPaths>;
  /** Page size sent when a list call names none. Default 1000. */
  pageSize?: number;
  /** The service's maximum page size; larger requests are capped. Default 1000. */
  maxPageSize?: number;
  /**
   * The longest body read from one response, in bytes; a longer one is cut there and raised as
   * ResponseTooLargeError. Default 32 MiB: a page of 1,000 items is well under 1 MiB.
   */
  maxResponseBytes?: number;
  /**
   * Lists hand out each item's JSON text as the service sent it (`PageItem.json`), for exports
   * that keep records verbatim. Costs ~0.6-0.9 µs an item, so it is off unless asked for. Default false.
   */
  itemJson?: boolean;
  /**
   * Told of every wait before a retry as it begins (the CLI prints a line for a long one). Called
   * synchronously; it must not throw.
   */
  onRetryWait?: (wait: RetryWait) => void;
}

export const DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

function parseBaseUrl(baseUrl: string, allowInsecureHttp: boolean): URL {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new ConfigError([{ path: 'baseUrl', message: 'must be an absolute URL' }]);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError([{ path: 'baseUrl', message: 'must be http or https' }]);
  // Here, not only in the CLI: every user of the client (the functions, the CLI, the bench) sends a
  // credential with each request, and this is the one place all of them pass through.
  if (insecureHttp(url) && !allowInsecureHttp) throw new ConfigError([{ path: 'baseUrl', message: INSECURE_HTTP_REASON }]);
  if (url.search || url.hash || url.username || url.password) {
    throw new ConfigError([{ path: 'baseUrl', message: 'must not carry a query, fragment or user info' }]);
  }
  // Paths are appended as written (`/companies/`), so the base ends without a slash.
  return new URL(url.href.replace(/\/+$/, ''));
}

/**
 * The company-data operations of the Accounting API (bearer: an API key or a user's access token).
 * One instance per credential; derive variants with `withOptions` (another company, another
 * credential) sharing transport and settings. A function that never calls the institution's token
 * operations builds this one, so its bundle does not carry them (export-period's: its size bound,
 * BENCHMARKS.md); `AccountingClient` adds them.
 */
export class DataClient {
  readonly companies: CompaniesResource;
  readonly taxReports: TaxReportsResource;
  readonly transactions: TransactionsResource;
  readonly categories: CategoriesResource;
  readonly apiKeys: ApiKeysResource;
  protected readonly engine: RequestEngine;

  constructor(protected readonly options: AccountingClientOptions) {
    const maxPageSize = options.maxPageSize ?? MAX_PAGE_SIZE;
    this.engine = new RequestEngine({
      baseUrl: parseBaseUrl(options.baseUrl, options.allowInsecureHttp === true),
      credentials: options.credentials,
      companyId: options.companyId,
      transport: options.transport ?? httpTransport(),
      timeoutMs: options.timeoutMs ?? 30_000,
      retry: { ...defaultRetryPolicy, ...options.retry },
      clock: options.clock ?? systemClock,
      random: options.random ?? Math.random,
      logger: options.logger ?? silentLogger,
      onWarning: options.onWarning,
      pageSize: resolvePageSize(options.pageSize, { pageSize: MAX_PAGE_SIZE, maxPageSize }),
      maxPageSize,
      maxResponseBytes: positiveInteger(options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES, 'maxResponseBytes'),
      itemJson: options.itemJson ?? false,
      onRetryWait: options.onRetryWait,
    });
    this.companies = new CompaniesResource(this.engine);
    this.taxReports = new TaxReportsResource(this.engine);
    this.transactions = new TransactionsResource(this.engine);
    this.categories = new CategoriesResource(this.engine);
    this.apiKeys = new ApiKeysResource(this.engine, resolveApiKeyPaths(options.apiKeyPaths));
  }

  /** A client with some options replaced (a learned company is not carried over). */
  withOptions(overrides: Partial<AccountingClientOptions>): DataClient {
    return new DataClient({ ...this.options, ...overrides });
  }
}

function positiveInteger(value: number, path: string): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new ConfigError([{ path, message: 'must be a positive integer' }]);
  return value;
}

export function createDataClient(options: AccountingClientOptions): DataClient {
  return new DataClient(options);
}
