import type { MetadataIssue } from './schemas';

/**
 * Things worth knowing that do not stop an operation. Each is logged at warn and passed to the
 * client's `onWarning` callback; a callback that throws turns the warning into a failure of the
 * operation in progress (an export that must be exact can do that on `count_mismatch`).
 */
export type AccountingApiWarning =
  /**
   * A list ended after `itemsRead` items while a page said otherwise. `counts` lists the counts
   * the pages reported, in order, without repeats: more than one means the list changed mid-read.
   * `itemsRead` leaves out the items dropped as `duplicate_item`: a repeat hides a skipped item
   * only if the count still tells it.
   */
  | { type: 'count_mismatch'; request: string; counts: number[]; itemsRead: number }
  /**
   * An item whose identity (its `publicId`, a tax report's `pk`) came earlier on this page or on
   * the page before: offset pages over a list that moved under us (an insert before the read
   * position hands the last items of a page out again at the start of the next). The repeat is
   * dropped; the first occurrence was handed over already. `path` is the repeat (`results[0]`).
   */
  | { type: 'duplicate_item'; request: string; path: string; id: string }
  /** A category's `metadata` text is not a JSON object; the text stays in the raw item. */
  | { type: 'invalid_category_metadata'; request: string; path: string; publicId: string; issue: MetadataIssue }
  /**
   * Optional fields (not named by the spec) whose values had the wrong type: read as absent (null
   * in the parsed form), kept in the raw object. `path` is the object (`results[3]`, `` for a
   * single object). A list reports each field once per iteration, at its first occurrence.
   */
  | { type: 'ignored_field'; request: string; path: string; fields: string[] }
  /**
   * The service refused the list's first page with a 400 while the request carried a page size
   * (`param`, `pageSize` the size sent): its configured maximum is likely lower (spec §8: "normally
   * 1,000 (configured)"). The list was requested again once without a page size, at the service's
   * own default, and followed by `next` (spec §4.3); `request` is the refused request.
   */
  | { type: 'page_size_refused'; request: string; param: string; pageSize: number }
  /**
   * A page's `next` lay under the base URL's path but named another origin (`nextOrigin`: a
   * service behind a TLS-terminating proxy writing `http://` or its internal host name): it was
   * requested on `baseOrigin` instead, its path and query kept (decision 108). Said once a list, at
   * the first such `next`; `request` is the page that carried it. Origins only: a query could carry
   * anything. The service's proxy settings are what to fix (it should see the public scheme and host).
   */
  | { type: 'next_rebased'; request: string; nextOrigin: string; baseOrigin: string };

export type WarningHandler = (warning: AccountingApiWarning) => void;

/** A warning about one list item, before the list fills in where it was seen. */
export type ItemWarning = Omit<Extract<AccountingApiWarning, { type: 'invalid_category_metadata' }>, 'request' | 'path'>;
