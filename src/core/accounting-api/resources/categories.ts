import { parseWith } from '../../shared/errors';
import type { PaginatedList } from '../pagination';
import type { RequestEngine } from '../request';
import { type Category, type PageQuery, categorySchema, pageQuerySchema } from '../schemas';

const publicIdOf = (category: Category): string => category.publicId;

/** `GET /accounting/categories/`; the page size goes out as `pageSize` (not `page_size`). */
export class CategoriesResource {
  constructor(private readonly engine: RequestEngine) {}

  /** A category whose metadata text is not a JSON object yields an `invalid_category_metadata` warning. */
  list(query: PageQuery = {}): PaginatedList<Category> {
    const { page, pageSize } = parseWith(pageQuerySchema, query, 'categories.list query');
    return this.engine.list({
      path: '/accounting/categories/',
      query: { page },
      pageSizeParam: 'pageSize',
      pageSize,
      itemSchema: categorySchema,
      identity: publicIdOf,
      checkItem: (category) =>
        category.metadataIssue === null
          ? undefined
          : { type: 'invalid_category_metadata', publicId: category.publicId, issue: category.metadataIssue },
    });
  }
}
