import type { Logger } from '../../shared/logger';
import { ConcurrentExportError, PreconditionFailedError } from './period-errors';
import { manifestKey, periodPrefix, runIdOf } from './layout';
import { readManifest, referencedKeys, serializeManifest, type Manifest } from './manifest';
import type { ObjectHead, ObjectStore } from './object-store';
import type { Period } from './period';
import type { DatasetName } from './datasets';
import { planSymlinks, writeSymlinks } from './symlinks';

/**
 * The atomic switch of a period (docs/exports.md, "Atomic periods").
 *
 * Data objects are already complete under `run=<runId>/`, where nobody looks. Then, in order:
 *   1. the manifest's version is checked against the one this run started from (fail fast);
 *   2. the manifest, which records every dataset's Athena symlink as it is about to be, is written
 *      with a compare-and-swap on that version: the commit point;
 *   3. the symlinks are rewritten to match it;
 *   4. garbage collection deletes what neither the manifest nor a symlink references.
 *
 * Until 2 nothing of the run is visible anywhere, Athena included, and a failure leaves the
 * previous complete period as it was. After 2 the period is published whatever happens: a symlink
 * that fails to be written (or a crash before it is) leaves Athena on the previous complete export
 * of that dataset, which GC keeps while the symlink names it, until any later export of the period
 * rewrites every symlink. Athena may lag the manifest; it never runs ahead of it.
 */
export interface PublishInput {
  store: ObjectStore;
  company: string;
  period: Period;
  /** The manifest to commit; its `symlinks` are replaced by the ones derived from its objects. */
  manifest: Manifest;
  /** The manifest version this run started from; undefined when the period had none. */
  expected: ObjectHead | undefined;
  /** The manifest this run replaces: its objects become garbage once the switch is made. */
  previous: Manifest | undefined;
  now: number;
  gcGraceMs: number;
  logger: Logger;
  /**
   * Runs right before the manifest write: a record made here exists whenever the write may have
   * happened (a split's publish attempt). A rejection aborts the publish as a failed write does.
   */
  beforeSwap?: () => Promise<void>;
}

export interface PublishResult {
  manifestKey: string;
  /** The manifest as committed, its symlinks included. */
  manifest: Manifest;
  /** Keys deleted by garbage collection after the switch. */
  deleted: string[];
  /**
   * Datasets whose symlink could not be rewritten after the commit: the period is published, but
   * Athena still shows their previous export until the period is exported again. Empty when none.
   */
  staleSymlinks: DatasetName[];
}

export async function publishPeriod(input: PublishInput): Promise<PublishResult> {
  const { store, company, period, logger } = input;
  const key = manifestKey(company, period);

  const current = await store.head(key);
  if (current?.etag !== input.expected?.etag) throw new ConcurrentExportError(key);

  // Every dataset's, carried-over ones too: an export of the period also repairs a symlink an
  // earlier publish could not write.
  const symlinks = await planSymlinks(store, company, period, input.manifest);
  const manifest: Manifest = { ...input.manifest, symlinks: symlinks.map((s) => s.entry) };
  await input.beforeSwap?.();
  try {
    await store.putObject(key, serializeManifest(manifest), {
      contentType: 'application/json',
      ...(input.expected ? { ifMatch: input.expected.etag } : { ifNoneMatch: '*' }),
    });
  } catch (error) {
    throw error instanceof PreconditionFailedError ? new ConcurrentExportError(key, error) : error;
  }

  // Published. From here on nothing may fail the run: a report of it would call a complete period failed.
  const failures = await writeSymlinks(store, symlinks);
  const staleSymlinks = failures.map((f) => f.dataset);
  if (failures.length > 0) {
    logger.error('export published, but Athena still shows the previous export of these datasets: their symlinks could not be rewritten', {
      manifestKey: key,
      symlinkKeys: failures.map((f) => f.key),
      datasets: staleSymlinks,
      error: failures[0]!.error,
      repair: 'export the period again: every export of a period rewrites all its symlinks (acctops doctor lists stale ones)',
    });
  }

  const superseded = new Set(input.previous ? referencedKeys(input.previous) : []);
  let deleted: string[] = [];
  try {
    deleted = await collectGarbage(store, company, period, { now: input.now, graceMs: input.gcGraceMs, superseded, logger });
  } catch (error) {
    // The period is published; garbage only costs storage and the next run collects it.
    logger.warn('garbage collection after publish failed; the next run retries it', { manifestKey: key, error });
  }
  return { manifestKey: key, manifest, deleted, staleSymlinks };
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
  // A symlink may lag the manifest (its write failed after the commit, or the process stopped
  // between the two): the previous run's Parquet it names is what Athena reads, and must survive
  // until the symlink is rewritten. One per dataset, read at once.
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
