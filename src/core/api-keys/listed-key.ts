import { keyPrefix } from '../shared/redact';

/**
 * The fewest characters a listed prefix must show after its last underscore to name a key. The
 * spec says only that a key starts with "a fixed service prefix followed by an underscore" and
 * that "the key list shows the key prefix" (§5.1), not how long that prefix is, so a service may
 * show 6 characters after the underscore, 12, or a prefix with underscores of its own (`sk_live_`).
 * Four random characters tell two keys apart but for about one pair in 15 million (base62), and
 * the one-live-match rule below catches that pair; fewer (`sbx_`, `sk_live_A`) could be a prefix
 * of every key of the service, which names none.
 */
export const MIN_LISTED_PREFIX_CHARS = 4;

/** What the key list shows of a key: enough to match it. */
export interface ListedKey {
  readonly publicId: string;
  readonly prefix: string;
  readonly revokedAt: string | null;
}

export type ListedKeyMatch<K extends ListedKey> =
  | { readonly kind: 'found'; readonly key: K }
  /** No live key matches; `tooShort` are live keys whose prefix begins the key but is too short to name it. */
  | { readonly kind: 'none'; readonly tooShort: readonly K[] }
  /** More than one live key's prefix begins the key. */
  | { readonly kind: 'ambiguous'; readonly keys: readonly K[] };

/** Whether `prefix` shows at least MIN_LISTED_PREFIX_CHARS characters after its last underscore. */
export function namesAKey(prefix: string): boolean {
  const underscore = prefix.lastIndexOf('_');
  return underscore >= 0 && prefix.length - underscore - 1 >= MIN_LISTED_PREFIX_CHARS;
}

/**
 * The live entry of the key list that is `apiKey`: the one whose listed prefix the full key starts
 * with, whatever that prefix's length (spec §5.1). Exactly one must match; two are refused rather
 * than guessed between, since the match decides which key a rotation later revokes.
 */
export function matchListedKey<K extends ListedKey>(keys: readonly K[], apiKey: string): ListedKeyMatch<K> {
  const live = keys.filter((k) => k.revokedAt === null && k.prefix.length > 0 && apiKey.startsWith(k.prefix));
  const named = live.filter((k) => namesAKey(k.prefix));
  if (named.length === 1) return { kind: 'found', key: named[0]! };
  if (named.length > 1) return { kind: 'ambiguous', keys: named };
  return { kind: 'none', tooShort: live };
}

/**
 * A listed prefix as our logs and messages show a key: no longer than `keyPrefix` of a full key
 * (the service prefix, its underscore and 8 characters), whatever length the service lists.
 */
export function shownPrefix(listedPrefix: string): string {
  return keyPrefix(listedPrefix);
}
