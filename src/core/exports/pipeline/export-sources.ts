import {
  createAccountingClient,
  type AccountingClient,
  type AccountingClientOptions,
  type AccountingApiWarning,
  type CredentialProvider,
  type PaginatedList,
  type PageItem,
} from '../../accounting-api';
import type { Clock } from '../../shared/clock';
import type { Logger } from '../../shared/logger';
import { ExportCountMismatchError } from './pipeline-errors';
import { periodRange, type Period } from '../formats/period';
import type { DatasetName, ExportSources, PagedSource } from '../formats/datasets';

/** The page size every export asks for (the service's maximum; issue 5). */
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

/** Client settings an export may tune; the rest (page size, warnings) is fixed for exactness. */
export type ExportClientSettings = Partial<Pick<AccountingClientOptions, 'transport' | 'timeoutMs' | 'retry' | 'random' | 'maxPageSize'>>;

export interface ExportClientOptions extends ExportClientSettings {
  baseUrl: string;
  credentials: CredentialProvider;
  /** Sent as `X-Company-Id` (a user token selects the company with it) and enforced as scope. */
  companyId?: string;
  clock: Clock;
  logger: Logger;
}

/**
 * A client for exports: page size 1000 on every list, and a `count_mismatch` warning is an
 * ExportCountMismatchError that ends the list (an export must be exact; the client alone only
 * warns). Other warnings stay warnings: a category's invalid metadata (the text is exported as
 * sent), a `duplicate_item` (the repeat is left out already, and the exporter counts it).
 */
export function createExportClient(options: ExportClientOptions): AccountingClient {
  const { baseUrl, credentials, companyId, clock, logger, ...settings } = options;
  return createAccountingClient({
    ...settings,
    baseUrl,
    credentials,
    companyId,
    clock,
    logger,
    pageSize: EXPORT_PAGE_SIZE,
    // The raw JSONL keeps each record's text as sent, cut from the page instead of serialised again.
    itemJson: true,
    onWarning: (warning: AccountingApiWarning) => {
      if (warning.type === 'count_mismatch') throw new ExportCountMismatchError(warning);
    },
  });
}

/**
 * The three datasets of a company's month, straight from the client: transactions with the
 * period's `date_from`/`date_to`, every tax report of the company (identified by `pk`) and every
 * category (also read to resolve names). Nothing is fetched until the exporter iterates.
 */
export function exportSources(client: AccountingClient, companyId: string, period: Period, onProgress?: ProgressCallback): ExportSources {
  const size = { pageSize: EXPORT_PAGE_SIZE };
  return {
    transactions: tracked(client.transactions.list({ ...periodRange(period), ...size }), 'transactions', onProgress),
    taxReports: tracked(client.taxReports.list(companyId, size), 'tax_reports', onProgress),
    categories: tracked(client.categories.list(size), 'categories', onProgress),
  };
}

/** The list's items (and pages), reporting progress after each page when asked to. */
function tracked<T>(
  list: PaginatedList<T>,
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
