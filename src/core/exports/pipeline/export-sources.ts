import {
  createDataClient,
  type DataClient,
  type AccountingClientOptions,
  type AccountingApiWarning,
  type CredentialProvider,
  type Page,
  type PageItem,
  type WarningHandler,
} from '../../accounting-api';
import { transactionsOfRange, type DateToFinding, type DateToMode } from './date-to';
import type { Clock } from '../../shared/clock';
import type { Logger } from '../../shared/logger';
import { ExportCountMismatchError } from './pipeline-errors';
import { periodRange, type Period } from '../formats/period';
import type { DatasetName, ExportSources, PagedSource } from '../formats/datasets';

/**
 * The page size an export asks for unless configured otherwise (`exports.pageSize`, `--page-size`):
 * the spec's usual maximum (§8: "normally 1,000 (configured)"; issue 5).
 */
export const EXPORT_PAGE_SIZE = 1000;

/** Records read so far, per dataset: what a progress bar draws. Reported after every page. */
export interface ExportProgress {
  dataset: DatasetName;
  records: number;
  /** The `count` the latest page announced. */
  total: number;
  /** True once the dataset's last page has been read. */
  done: boolean;
}

export type ProgressCallback = (progress: ExportProgress) => void;

/**
 * Client settings an export may tune; the rest (warnings, item text) is fixed for exactness.
 * `pageSize` is what every list asks for (default EXPORT_PAGE_SIZE); `dateTo` is how the service
 * reads `date_to` (date-to.ts; default `detect`).
 */
export type ExportClientSettings = Partial<
  Pick<
    AccountingClientOptions,
    'transport' | 'timeoutMs' | 'retry' | 'random' | 'maxPageSize' | 'pageSize' | 'onRetryWait' | 'allowInsecureHttp'
  >
> & {
  dateTo?: DateToMode;
  /** Told of every warning the export goes on after (a person's terminal: the CLI's direct mode). */
  onWarning?: WarningHandler;
};

export interface ExportClientOptions extends ExportClientSettings {
  baseUrl: string;
  credentials: CredentialProvider;
  /** Sent as `X-Company-Id` (a user token selects the company with it) and enforced as scope. */
  companyId?: string;
  clock: Clock;
  logger: Logger;
}

/** What the owner of a service whose `next` links name another origin should change. */
export const NEXT_REBASED_HINT =
  'the service builds next from the request it sees behind its proxy: have the proxy pass the public scheme and host (X-Forwarded-Proto, X-Forwarded-Host) and the service trust them (Django: SECURE_PROXY_SSL_HEADER, USE_X_FORWARDED_HOST)';

/**
 * A client for exports: the export's page size on every list, and a `count_mismatch` warning is an
 * ExportCountMismatchError that ends the list (an export must be exact; the client alone only
 * warns). Other warnings stay warnings: a category's invalid metadata (the text is exported as
 * sent), a `duplicate_item` (the repeat is left out already, and the exporter counts it), a page
 * size the service refused (the list went on at the service's default; logged with the setting), a
 * `next` requested on the base origin instead of the one it named (logged with what to fix).
 */
export function createExportClient(options: ExportClientOptions): DataClient {
  const { baseUrl, credentials, companyId, clock, logger, dateTo: _dateTo, onWarning, ...settings } = options;
  return createDataClient({
    ...settings,
    baseUrl,
    credentials,
    companyId,
    clock,
    logger,
    pageSize: settings.pageSize ?? EXPORT_PAGE_SIZE,
    // The raw JSONL keeps each record's text as sent, cut from the page instead of serialised again.
    itemJson: true,
    onWarning: (warning: AccountingApiWarning) => {
      if (warning.type === 'count_mismatch') throw new ExportCountMismatchError(warning);
      if (warning.type === 'page_size_refused') {
        // Once a list: every export pays a refused request and a smaller page until it is set.
        logger.warn('the service refused the page size; the list is read at its default page size instead', {
          request: warning.request,
          pageSize: warning.pageSize,
          hint: "set the stage's exports.pageSize (or --page-size) to the service's maximum page size",
        });
      }
      if (warning.type === 'next_rebased') {
        // Once a list: the export is right as it is, but the service tells every client a wrong address.
        logger.warn("the service's next links name another origin; the pages were requested on the base URL's instead", {
          request: warning.request,
          nextOrigin: warning.nextOrigin,
          baseOrigin: warning.baseOrigin,
          hint: NEXT_REBASED_HINT,
        });
      }
      onWarning?.(warning);
    },
  });
}

export interface ExportSourcesOptions {
  onProgress?: ProgressCallback;
  /** Default `detect`. */
  dateTo?: DateToMode;
  logger: Logger;
  onDateTo?: (finding: DateToFinding) => void;
}

/**
 * The three datasets of a company's month, straight from the client: transactions with the
 * period's `date_from`/`date_to` (and its last day again where `date_to` is exclusive: date-to.ts),
 * every tax report of the company (identified by `pk`) and every category (also read to resolve
 * names). Nothing is fetched until the exporter iterates.
 */
export function exportSources(client: DataClient, companyId: string, period: Period, options: ExportSourcesOptions): ExportSources {
  const transactions = transactionsOfRange(client, periodRange(period), {
    dateTo: options.dateTo ?? 'detect',
    logger: options.logger,
    onFinding: options.onDateTo,
  });
  return {
    transactions: tracked(transactions, 'transactions', options.onProgress),
    taxReports: tracked(client.taxReports.list(companyId), 'tax_reports', options.onProgress),
    categories: tracked(client.categories.list(), 'categories', options.onProgress),
    transactionsDateTo: transactions.reading,
  };
}

/** The list's items (and pages), reporting progress after each page when asked to. */
function tracked<T>(
  list: AsyncIterable<PageItem<T>> & { pages(): AsyncIterable<Page<T>> },
  dataset: DatasetName,
  onProgress: ProgressCallback | undefined,
): AsyncIterable<PageItem<T>> & PagedSource<PageItem<T>> {
  if (!onProgress) return list;
  const report = onProgress;
  async function* pages(): AsyncGenerator<{ readonly items: readonly PageItem<T>[] }> {
    let records = 0;
    for await (const page of list.pages()) {
      yield page;
      records += page.items.length;
      // Every list has a first page (an empty one says count 0), so each dataset reports done.
      report({ dataset, records, total: page.count, done: page.next === null });
    }
  }
  return {
    pages,
    async *[Symbol.asyncIterator]() {
      // A plain loop: `yield*` over an array in an async generator adds an await per item.
      for await (const page of pages()) for (const item of page.items) yield item;
    },
  };
}
