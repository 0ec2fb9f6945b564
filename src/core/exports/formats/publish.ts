import { createHash } from 'node:crypto';
import type { Logger } from '../../shared/logger';
import { ConcurrentExportError, PreconditionFailedError } from './period-errors';
import { manifestKey, periodPrefix, runIdOf, symlinkKey } from './layout';
import { readManifest, referencedKeys, serializeManifest, type Manifest, type ManifestSymlink } from './manifest';
import type { ObjectHead, ObjectStore } from './object-store';
import type { Period } from './period';
import type { DatasetName } from './datasets';

/**
 * The atomic switch of a period (docs/exports.md, "Atomic periods").
 *
 * Data objects are already complete under `run=<runId>/`, where nobody looks. Then, in order:
 *   1. the manifest's version is checked against the one this run started from (fail fast);
 *   2. each replaced dataset's Athena symlink is rewritten to list the new Parquet object;
 *   3. the manifest is written with a compare-and-swap on that version: the commit point;
 *   4. garbage collection deletes what the new manifest no longer references.
 *
 * A failure before 3 leaves the old manifest, whose objects GC never touched, so the previous
 * complete period stays intact; symlinks are pointed back, and if the process dies before that
 * they point at complete data (never at a partial run), which GC keeps while they do. A crash
 * after 3 leaves a complete new period and garbage that the next run or `collectGarbage` removes.
 */
export interface PublishInput {
  store: ObjectStore;
  company: string;
  period: Period;
  manifest: Manifest;
  /** The datasets this run replaced (their symlinks are rewritten; carried-over ones are not). */
  replaced: readonly DatasetName[];
  /** The manifest version this run started from; undefined when the period had none. */
  expected: ObjectHead | undefined;
  /** The manifest this run replaces: its objects become garbage once the switch is made. */
  previous: Manifest | undefined;
  now: number;
  gcGraceMs: number;
  logger: Logger;
  /**
   * Runs after the symlinks, right before the manifest write: a record made here exists whenever
   * the write may have happened (a split's publish attempt). A rejection aborts the publish as a
   * failed write does.
   */
  beforeSwap?: () => Promise<void>;
}

export interface PublishResult {
  manifestKey: string;
  /** Keys deleted by garbage collection after the switch. */
  deleted: string[];
}

export async function publishPeriod(input: PublishInput): Promise<PublishResult> {
  const { store, company, period, manifest, logger } = input;
  const key = manifestKey(company, period);

  const current = await store.head(key);
  if (current?.etag !== input.expected?.etag) throw new ConcurrentExportError(key);

  try {
    const symlinks = await writeSymlinks(store, company, period, manifest, input.replaced);
    const final: Manifest = {
      ...manifest,
      symlinks: [...manifest.symlinks.filter((s) => !input.replaced.includes(s.dataset)), ...symlinks].sort((a, b) =>
        compare(a.key, b.key),
      ),
    };
    await input.beforeSwap?.();
    await store.putObject(key, serializeManifest(final), {
      contentType: 'application/json',
      ...(input.expected ? { ifMatch: input.expected.etag } : { ifNoneMatch: '*' }),
    });
  } catch (error) {
    // The switch did not happen, but step 2 may have moved some of our symlinks (all of them when
    // the manifest write failed). Point them back at what the manifest in the store lists (the
    // previous run's, or a concurrent winner's). If that fails too, the symlinks still name
    // complete objects, which cleanup and GC leave alone.
    try {
      await writeSymlinks(store, company, period, await readManifest(store, key), input.replaced);
    } catch (cause) {
      logger.error('could not restore Athena symlinks after a failed switch', { manifestKey: key, error: cause });
    }
    throw error instanceof PreconditionFailedError ? new ConcurrentExportError(key, error) : error;
  }

  const superseded = new Set(input.previous ? referencedKeys(input.previous) : []);
  let deleted: string[] = [];
  try {
    deleted = await collectGarbage(store, company, period, { now: input.now, graceMs: input.gcGraceMs, superseded, logger });
  } catch (error) {
    // The period is published; garbage only costs storage and the next run collects it.
    logger.warn('garbage collection after publish failed; the next run retries it', { manifestKey: key, error });
  }
  return { manifestKey: key, deleted };
}

/**
 * Rewrites the symlink of each dataset in `datasets` to list that dataset's Parquet objects in
 * `manifest` (an empty file when there are none, or no manifest: Athena then sees no rows).
 */
async function writeSymlinks(
  store: ObjectStore,
  company: string,
  period: Period,
  manifest: Manifest | undefined,
  datasets: readonly DatasetName[],
): Promise<ManifestSymlink[]> {
  // One request (or two) per dataset, all at once: against S3 each is a round trip, and a period
  // has at most three. Every write settles before this returns, so a restore after a failure
  // never races one of ours still in flight.
  const outcomes = await Promise.allSettled(
    datasets.map(async (dataset): Promise<ManifestSymlink | undefined> => {
      const targets = (manifest?.objects ?? []).filter((o) => o.dataset === dataset && o.format === 'parquet').map((o) => o.key);
      const key = symlinkKey(company, period, dataset);
      // No Parquet and no symlink yet: nothing for Athena to see or to stop seeing.
      if (targets.length === 0 && !(await store.head(key))) return undefined;
      const body = Buffer.from(targets.map((t) => `${store.url(t)}\n`).join(''), 'utf8');
      await store.putObject(key, body, { contentType: 'text/plain; charset=utf-8' });
      return { key, dataset, bytes: body.byteLength, sha256: createHash('sha256').update(body).digest('hex'), targets };
    }),
  );
  const written: ManifestSymlink[] = [];
  for (const outcome of outcomes) {
    if (outcome.status === 'rejected') throw outcome.reason;
    if (outcome.value) written.push(outcome.value);
  }
  return written;
}

export interface GarbageOptions {
  /** Clock time, epoch milliseconds. */
  now: number;
  /**
   * Unreferenced run objects younger than this are kept: they may belong to a run still in flight.
   * Must exceed the longest export run.
   */
  graceMs: number;
  /** Keys known to be dead whatever their age (the objects of the manifest just replaced). */
  superseded?: ReadonlySet<string>;
  logger?: Logger;
}

/**
 * Deletes run objects of a period that nothing references. Safe to run at any time and to retry:
 * it re-reads the manifest and the symlinks, keeps everything they reference, never touches keys
 * outside a `run=` folder (the manifest, symlinks, anything foreign), and only deletes an
 * unreferenced object when it is superseded or older than the grace period.
 */
export async function collectGarbage(store: ObjectStore, company: string, period: Period, options: GarbageOptions): Promise<string[]> {
  const prefix = periodPrefix(company, period);
  const manifest = await readManifest(store, manifestKey(company, period));
  const live = manifest ? referencedKeys(manifest) : new Set<string>();
  const objects: { key: string; lastModified: number }[] = [];
  const symlinks: string[] = [];
  for await (const object of store.list(prefix)) {
    if (object.key.endsWith('/_symlink/symlink.txt')) symlinks.push(object.key);
    else if (runIdOf(object.key) !== undefined) objects.push(object);
  }
  // A symlink may run ahead of the manifest (a crash between steps 2 and 3 above): whatever
  // Athena can currently see must survive too. One per dataset, read at once.
  const symlinkUrls = new Set<string>();
  for (const body of await Promise.all(symlinks.map((k) => store.get(k)))) {
    for (const line of Buffer.from(body ?? new Uint8Array())
      .toString('utf8')
      .split('\n'))
      if (line) symlinkUrls.add(line);
  }
  const dead = objects
    .filter((o) => !live.has(o.key) && !symlinkUrls.has(store.url(o.key)))
    .filter((o) => options.superseded?.has(o.key) || options.now - o.lastModified > options.graceMs)
    .map((o) => o.key);
  if (dead.length > 0) {
    await store.delete(dead);
    options.logger?.info('export garbage collected', { prefix, deleted: dead.length });
  }
  return dead;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
