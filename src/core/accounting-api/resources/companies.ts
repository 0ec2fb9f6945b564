import { parseWith } from '../../shared/errors';
import type { PaginatedList } from '../pagination';
import type { RequestEngine } from '../request';
import { type Company, type PageQuery, type TaxReport, companySchema, pageQuerySchema, taxReportSchema, uuidSchema } from '../schemas';

/** `GET /companies/`: the key's one company, or the companies of a user's token. */
export class CompaniesResource {
  constructor(private readonly engine: RequestEngine) {}

  /**
   * For an API key whose company was not given, the single company listed becomes the key's
   * company: from then on, other company ids are refused before sending.
   */
  list(query: PageQuery = {}): PaginatedList<Company> {
    const { page, pageSize } = parseWith(pageQuerySchema, query, 'companies.list query');
    return this.engine.list({
      path: '/companies/',
      query: { page },
      pageSizeParam: 'page_size',
      pageSize,
      itemSchema: companySchema,
      // Spec §4.2: "the company the key belongs to"; a list envelope is read as well.
      single: true,
      onPage: (listed, response) => {
        const only = listed.items[0];
        if (listed.count === 1 && listed.items.length === 1 && only) this.engine.learnCompany(response.credential, only.parsed.publicId);
      },
    });
  }
}

const pkOf = (report: TaxReport): string => report.pk;

/** `GET /companies/{company_pk}/taxes/reports/`: tax reports, identified by `pk`. */
export class TaxReportsResource {
  constructor(private readonly engine: RequestEngine) {}

  list(companyId: string, query: PageQuery = {}): PaginatedList<TaxReport> {
    const company = parseWith(uuidSchema, companyId, 'companyId');
    const { page, pageSize } = parseWith(pageQuerySchema, query, 'taxReports.list query');
    return this.engine.list({
      path: `/companies/${encodeURIComponent(company)}/taxes/reports/`,
      query: { page },
      pageSizeParam: 'page_size',
      pageSize,
      itemSchema: taxReportSchema,
      // Spec §2: a tax report is identified by `pk`, not `publicId`.
      identity: pkOf,
      pathCompany: company,
    });
  }
}
