import * as z from 'zod';
import { issuesFromZod } from '../../shared/errors';
import { ManifestError } from './period-errors';
import type { ObjectStore } from './object-store';
import { manifestKey } from './layout';
import { periodContaining, type Period } from './period';
import { CSV_DIALECTS, DATASETS, FORMATS, type DatasetName, type ExportFormat } from './datasets';
import { lazySchema } from '../../shared/lazy-schema';

/**
 * `_manifest.json`: the description and the commit point of a period. A period is complete exactly
 * when its manifest exists, and it consists of exactly the objects the manifest lists.
 *
 * The schema is strict about what acctops relies on (keys, checksums, runs) and is versioned by
 * `schemaVersion`; a reader must refuse a version it does not know.
 */
export const MANIFEST_SCHEMA_VERSION = 1;

const sha256 = /* @__PURE__ */ lazySchema(() => z.string().regex(/^[0-9a-f]{64}$/));
const minorUnits = /* @__PURE__ */ lazySchema(() => z.string().regex(/^-?\d+$/));
const dataset = /* @__PURE__ */ lazySchema(() => z.enum(DATASETS));

const totalSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    currency: z.string(),
    cashflowType: z.string().nullable(),
    records: z.number().int().nonnegative(),
    /** Exact decimal with the currency's fraction digits (`-49.99` EUR, `500` JPY, `1.250` KWD). */
    amount: z.string().regex(/^-?\d+(\.\d+)?$/),
    amountMinor: minorUnits,
  }),
);

/** How the transactions' `date_to` was read (DateToReading); the part ledger stores a part's the same way. */
export const dateToSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    setting: z.enum(['detect', 'inclusive', 'exclusive']),
    read: z.enum(['inclusive', 'exclusive', 'undetermined']),
    lastDayRecords: z.number().int().nonnegative(),
    lastDayRepeats: z.number().int().nonnegative(),
    /** Additive (decision 85): absent when none, and in manifests and part results written before it. */
    nextDayDropped: z.number().int().nonnegative().optional(),
  }),
);

const datasetSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    /** The run that wrote this dataset (an earlier one when the dataset was carried over). */
    runId: z.string(),
    generatedAt: z.string(),
    records: z.number().int().nonnegative(),
    totals: z.array(totalSchema),
    /**
     * Records the service sent again on a later page while the list moved, written once and not
     * counted in `records` (docs/exports.md, "Records repeated across pages"). Absent when none:
     * additive and optional, so schema version 1 still holds.
     */
    duplicatesDropped: z.number().int().nonnegative().optional(),
    /**
     * Transactions only: of `records`, those the service returned for the month though the local
     * date of their `valueDate` is outside it; kept (docs/exports.md, "Transactions dated outside
     * the month"). Absent when none.
     */
    outsidePeriod: z.number().int().nonnegative().optional(),
    /**
     * Transactions only: how the service's `date_to` was read, and what reading the range's last
     * day on its own added (docs/exports.md, "The last day of a range"). Absent in a manifest
     * written before it was recorded, and for transactions from a source that does not say.
     */
    dateTo: dateToSchema.optional(),
  }),
);

const objectSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    key: z.string(),
    dataset,
    format: z.enum(FORMATS),
    /**
     * CSV objects only: the dialect the file is spelt in (docs/exports.md, "CSV dialects"). Written
     * for every CSV object since decision 95; absent in a manifest written before it, whose CSV is
     * `standard`. Additive and optional, so schema version 1 still holds.
     */
    csvDialect: z.enum(CSV_DIALECTS).optional(),
    contentType: z.string(),
    records: z.number().int().nonnegative(),
    bytes: z.number().int().nonnegative(),
    sha256,
  }),
);

const lazyTrigger = /* @__PURE__ */ lazySchema(() => z.object({ kind: z.enum(['monthly', 'on_demand']), id: z.string().min(1) }));

const symlinkSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    key: z.string(),
    dataset,
    bytes: z.number().int().nonnegative(),
    sha256,
    /** Keys of the Parquet objects it lists (empty when the dataset has no Parquet). */
    targets: z.array(z.string()),
  }),
);

export const manifestSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    schemaVersion: z.literal(MANIFEST_SCHEMA_VERSION),
    company: z.string(),
    period: z.string(),
    runId: z.string(),
    generatedAt: z.string(),
    tool: z.object({ name: z.string(), version: z.string() }),
    /**
     * What the deployed pipeline ran this export for: the monthly run (`id` its run id) or an
     * on-demand request (`id` the request id: the `ExportRequested` event's, or its detail's
     * `requestId`, or the webhook event's), so that whoever asked can tell its export from another
     * published after its request (decision 109). Absent for an export made outside the pipeline
     * and in a manifest written before it. Additive and optional, so schema version 1 still holds.
     */
    trigger: lazyTrigger.optional(),
    source: z.object({
      baseUrl: z.string(),
      query: z.object({ dateFrom: z.string(), dateTo: z.string() }),
      /**
       * A month exported in parts (docs/fleet-exports.md): each part's transaction query, in order.
       * Absent for a month exported whole. Additive and optional, so schema version 1 still holds.
       */
      parts: z.array(z.object({ dateFrom: z.string(), dateTo: z.string(), records: z.number().int().nonnegative() })).optional(),
    }),
    datasets: z.partialRecord(dataset, datasetSchema),
    objects: z.array(objectSchema),
    symlinks: z.array(symlinkSchema),
  }),
);

export type Manifest = z.infer<typeof manifestSchema>;
export type ManifestDataset = z.infer<typeof datasetSchema>;
export type ManifestDateTo = z.infer<typeof dateToSchema>;
export type ManifestObject = z.infer<typeof objectSchema>;
export type ManifestSymlink = z.infer<typeof symlinkSchema>;
export type ManifestTrigger = z.infer<typeof lazyTrigger>;

/** Pretty-printed, keys in schema order, trailing newline: diffable and deterministic. */
export function serializeManifest(manifest: Manifest): string {
  return `${JSON.stringify(manifestSchema.parse(manifest), null, 2)}\n`;
}

/** The period's manifest, or undefined when the period has none. Unreadable is a ManifestError. */
export async function readManifest(store: Pick<ObjectStore, 'get'>, key: string): Promise<Manifest | undefined> {
  const bytes = await store.get(key);
  if (bytes === undefined) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch (error) {
    throw new ManifestError(key, 'not JSON', error);
  }
  const parsed = manifestSchema.safeParse(json);
  if (!parsed.success) {
    const first = issuesFromZod(parsed.error)[0];
    throw new ManifestError(
      key,
      `not a schema ${MANIFEST_SCHEMA_VERSION} manifest (${first?.path || '(root)'}: ${first?.message ?? 'invalid'})`,
      parsed.error,
    );
  }
  return parsed.data;
}

/**
 * Whether the company's period is exported: its manifest (the commit point) exists, is readable,
 * and was generated after the period ended on the wall clock of `timeZone`. An export made while
 * the month was still running holds only part of it, though its manifest is as complete as any,
 * so it does not count. The one test of it that the overdue check and `acctops doctor` share
 * (decision 25), so that the alarm and the doctor cannot disagree about a month.
 */
export async function periodExported(
  store: Pick<ObjectStore, 'get'>,
  companyId: string,
  period: Period,
  timeZone: string,
): Promise<boolean> {
  let manifest: Manifest | undefined;
  try {
    manifest = await readManifest(store, manifestKey(companyId, period));
  } catch (error) {
    // A damaged manifest publishes nothing anyone can trust: the month is not exported.
    if (error instanceof ManifestError) return false;
    throw error;
  }
  return manifest !== undefined && periodContaining(Date.parse(manifest.generatedAt), timeZone).text > period.text;
}

/** Every key a manifest keeps alive: its data objects and the data its symlinks point at. */
export function referencedKeys(manifest: Manifest): Set<string> {
  const keys = new Set<string>(manifest.objects.map((o) => o.key));
  for (const link of manifest.symlinks) for (const target of link.targets) keys.add(target);
  return keys;
}

/**
 * What a run replacing `datasets` in only `formats` would delete from the period `manifest`
 * describes: each dataset and format it lists that `formats` lacks, once, with the run that wrote
 * it. Non-empty means the run needs `replaceFormats` (FormatLossError otherwise).
 */
export function droppedFormats(
  manifest: Manifest,
  datasets: readonly DatasetName[],
  formats: readonly ExportFormat[],
): { dataset: DatasetName; format: ExportFormat; runId: string }[] {
  const dropped = new Map<string, { dataset: DatasetName; format: ExportFormat; runId: string }>();
  for (const o of manifest.objects) {
    if (!datasets.includes(o.dataset) || formats.includes(o.format)) continue;
    dropped.set(`${o.dataset}:${o.format}`, {
      dataset: o.dataset,
      format: o.format,
      runId: manifest.datasets[o.dataset]?.runId ?? manifest.runId,
    });
  }
  return [...dropped.values()];
}
