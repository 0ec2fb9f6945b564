/** Small formatting helpers shared by the commands' tables. */
import { fileURLToPath } from 'node:url';

export function iso(epochMs: number | null | undefined): string | undefined {
  return epochMs === null || epochMs === undefined ? undefined : new Date(epochMs).toISOString().replace(/\.000Z$/, 'Z');
}

/** `in 12m`, `3h ago`: how far `epochMs` is from `now`. */
export function relative(epochMs: number | null | undefined, now: number): string | undefined {
  if (epochMs === null || epochMs === undefined) return undefined;
  const delta = epochMs - now;
  const abs = Math.abs(delta);
  const text =
    abs < 60_000
      ? `${Math.round(abs / 1000)}s`
      : abs < 3_600_000
        ? `${Math.round(abs / 60_000)}m`
        : abs < 172_800_000
          ? `${Math.round(abs / 3_600_000)}h`
          : `${Math.round(abs / 86_400_000)}d`;
  return delta >= 0 ? `in ${text}` : `${text} ago`;
}

export function counts<T extends string>(values: readonly T[]): Record<T, number> {
  const out = {} as Record<T, number>;
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}

/**
 * An error as the LAST ERROR and ERROR columns show it: its class, and its code in parentheses
 * (`AuthenticationError (user_disabled)`), which is what the runbooks tell cases apart by.
 */
export function errorLabel(errorClass: string | null | undefined, errorCode: string | null | undefined): string | undefined {
  if (!errorClass) return undefined;
  return errorCode ? `${errorClass} (${errorCode})` : errorClass;
}

/** `text` as one word for a POSIX shell: as is when nothing in it is special, else single-quoted. */
export function shellQuote(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, "'\\''")}'`;
}

/**
 * A location as a person copies it: a local file as its path (`/tmp/out dir/…`, not the
 * percent-encoded `file:///tmp/out%20dir/…` the manifest and `--json` carry), an `s3://` address as
 * it is. A `file:` URL that is not a path on this system stays a URL.
 */
export function shownLocation(url: string): string {
  if (!url.startsWith('file:')) return url;
  try {
    return fileURLToPath(url);
  } catch {
    return url;
  }
}

/** A sentence from text that may already end in a full stop (an error's message): one full stop, never two. */
export function sentence(text: string): string {
  return /[.!?]$/.test(text) ? text : `${text}.`;
}
