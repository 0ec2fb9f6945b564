import { parseWith } from '../../shared/errors';
import type { PaginatedList } from '../pagination';
import type { RequestEngine } from '../request';
import { type Transaction, type TransactionQuery, transactionQuerySchema, transactionSchema } from '../schemas';
import { transactionFastPath } from '../transaction-fast-path';

const publicIdOf = (transaction: Transaction): string => transaction.publicId;

/** `GET /accounting/transactions/`; the page size goes out as `page_size`. */
export class TransactionsResource {
  constructor(private readonly engine: RequestEngine) {}

  /** `dateFrom`/`dateTo` (inclusive) filter on the date of `valueDate` as written in its own offset. */
  list(query: TransactionQuery = {}): PaginatedList<Transaction> {
    const q = parseWith(transactionQuerySchema, query, 'transactions.list query');
    return this.engine.list({
      path: '/accounting/transactions/',
      query: { date_from: q.dateFrom, date_to: q.dateTo, page: q.page },
      pageSizeParam: 'page_size',
      pageSize: q.pageSize,
      itemSchema: transactionSchema,
      fastParse: transactionFastPath,
      identity: publicIdOf,
    });
  }
}
