import * as z from 'zod';
import { lazySchema } from './lazy-schema';

/**
 * A UUID as acctops keeps and compares it: lower case. RFC 9562 makes UUIDs case-insensitive on
 * input and lower case on output, and an operator may paste one in upper case (SQL Server and .NET
 * print them so). Every place an id enters acctops (a function's event, a CLI argument, a queue
 * message, a token record's key) folds it here, so two spellings of one id can never name two
 * records, or miss one (decision 77 in docs/architecture.md).
 */
export function foldUuid(id: string): string {
  return id.toLowerCase();
}

/** Any 8-4-4-4-12 hex identifier (as `uuidSchema` of the client), folded to lower case. */
export const caseFoldedUuid = /* @__PURE__ */ lazySchema(() => z.guid().transform(foldUuid));
