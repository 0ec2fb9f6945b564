import { createHash } from 'node:crypto';
import { symlinkKey } from './layout';
import type { Manifest, ManifestSymlink } from './manifest';
import type { ObjectStore } from './object-store';
import type { Period } from './period';
import { DATASETS, type DatasetName } from './datasets';

/**
 * Athena's view of a period: `<dataset>/_symlink/symlink.txt`, one `store.url` per line of the
 * dataset's Parquet objects. It follows the manifest (docs/exports.md, "Atomic periods"): the
 * manifest records each symlink as it will be, and the symlinks are written only once the manifest
 * is in place, so Athena never reads a run that was not committed.
 */
export interface PlannedSymlink {
  entry: ManifestSymlink;
  body: Buffer;
}

/**
 * The symlink of every dataset `manifest` has, from its Parquet objects (an empty file when there
 * are none). Reads only: a dataset without Parquet gets one only where a symlink exists already,
 * which must stop showing rows; one that never had a symlink needs none.
 */
export async function planSymlinks(
  store: Pick<ObjectStore, 'head' | 'url'>,
  company: string,
  period: Period,
  manifest: Manifest,
): Promise<PlannedSymlink[]> {
  const planned = await Promise.all(
    DATASETS.filter((dataset) => manifest.datasets[dataset]).map(async (dataset): Promise<PlannedSymlink | undefined> => {
      const targets = manifest.objects.filter((o) => o.dataset === dataset && o.format === 'parquet').map((o) => o.key);
      const key = symlinkKey(company, period, dataset);
      if (targets.length === 0 && !(await store.head(key))) return undefined;
      const body = Buffer.from(targets.map((t) => `${store.url(t)}\n`).join(''), 'utf8');
      return { entry: { key, dataset, bytes: body.byteLength, sha256: sha256(body), targets }, body };
    }),
  );
  return planned.filter((p) => p !== undefined).sort((a, b) => (a.entry.key < b.entry.key ? -1 : a.entry.key > b.entry.key ? 1 : 0));
}

export interface SymlinkFailure {
  dataset: DatasetName;
  key: string;
  error: unknown;
}

/**
 * Writes the symlinks, all at once (a period has at most three, each a round trip against S3).
 * Never rejects: the failures are returned, since the period they belong to is already published.
 */
export async function writeSymlinks(store: Pick<ObjectStore, 'putObject'>, planned: readonly PlannedSymlink[]): Promise<SymlinkFailure[]> {
  const outcomes = await Promise.allSettled(
    planned.map((p) => store.putObject(p.entry.key, p.body, { contentType: 'text/plain; charset=utf-8' })),
  );
  return outcomes.flatMap((outcome, i) =>
    outcome.status === 'rejected' ? [{ dataset: planned[i]!.entry.dataset, key: planned[i]!.entry.key, error: outcome.reason }] : [],
  );
}

/**
 * How long after its manifest's commit (the manifest object's last modification) a running publish
 * may still be writing the symlinks: a reader that finds them behind a manifest this young may have
 * come between the two, and cannot tell that from a failed write yet. The writes are up to three
 * small PutObjects sent at once right after the commit: well under a second, and the SDK's retries
 * of a throttled or failed one (3 attempts, backoff of at most a few seconds) add little. A minute
 * covers those with room to spare, and a reader's clock a few tens of seconds off S3's. Longer would
 * only delay the report of a write that failed, which the publish itself reports at once
 * (`staleSymlinks`, the error it logs).
 */
export const SYMLINK_PUBLISH_WINDOW_MS = 60_000;

/**
 * The datasets whose symlink in the store is not the one `manifest` records (other bytes, or
 * none): Athena shows an earlier export of them than the manifest describes. Any export of the
 * period rewrites every symlink of its manifest.
 */
export async function staleSymlinks(store: Pick<ObjectStore, 'get'>, manifest: Manifest): Promise<DatasetName[]> {
  const stored = await Promise.all(manifest.symlinks.map((s) => store.get(s.key)));
  return manifest.symlinks.filter((s, i) => stored[i] === undefined || sha256(stored[i]) !== s.sha256).map((s) => s.dataset);
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}
