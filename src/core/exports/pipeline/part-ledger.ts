import * as z from 'zod';
import { CSV_DIALECTS, DATASETS, FORMATS, type DatasetName, type DateToReading } from '../formats/datasets';
import type { AmountTotal } from '../formats/totals';
import { dateToSchema, type ManifestObject } from '../formats/manifest';
import { lazySchema } from '../../shared/lazy-schema';

/**
 * The ledger of months exported in parts (docs/fleet-exports.md). A split records its parts
 * once; each part, when its files are written, records what it wrote and adds its index to the
 * split's set of done parts. The part whose addition completes the set publishes the one manifest
 * of the month. Adding to a set is idempotent (a redelivered part adds nothing), so "all parts
 * done" is exact, not a counter that a crash can skew.
 *
 * The run ledger's table holds it in AWS (item collection `split#<splitId>`), memory in tests.
 */

export interface SplitPart {
  index: number;
  /** Inclusive local dates of valueDate (docs/assumptions.md). */
  dateFrom: string;
  dateTo: string;
}

export interface SplitRecord {
  splitId: string;
  companyId: string;
  period: string;
  /** The run id shared by every part's files. */
  runId: string;
  parts: SplitPart[];
  /**
   * The currency of transactions sent without one, for every part: decided once, when the split is
   * planned (the company's registry entry), so a change meanwhile cannot give one month two.
   * Absent: EUR (and on a split recorded before it existed, whose parts used EUR).
   */
  defaultCurrency?: string;
  /** Epoch ms. */
  createdAt: number;
  /** Indexes of the parts whose files are complete. */
  done: number[];
  /** Epoch ms of the publish of the month's manifest. */
  publishedAt?: number;
  /**
   * Epoch ms of the end of what follows the publish (ExportCompleted, the run ledger's settle).
   * Until then a redelivered part of the published split finishes those steps.
   */
  reportedAt?: number;
  /**
   * Each manifest write the split's publish attempted, recorded just before it. The period's
   * manifest may be another run's by the time a delivery finds `publishedAt` unset, so only this
   * record tells that a write of the split was made (and replaced since) from one never made.
   */
  publishAttempts: PublishAttempt[];
}

export interface PublishAttempt {
  /** Unique to the attempt. */
  id: string;
  /** Epoch ms. */
  at: number;
  /** The ETag of the period's manifest the write was to replace; absent when the period had none. */
  from?: string;
  /** The write was refused by its condition: it was certainly not made. */
  refused: boolean;
}

export interface StagedDataset {
  records: number;
  totals: AmountTotal[];
  objects: ManifestObject[];
  /** Repeats left out (DatasetSummary.duplicatesDropped); absent in a result stored before it was counted. */
  duplicatesDropped?: number;
  /** Transactions: how the part's range read `date_to`; absent in a result stored before it was recorded. */
  dateTo?: DateToReading;
}

export interface PartResult {
  index: number;
  datasets: Partial<Record<DatasetName, StagedDataset>>;
}

const totalSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    currency: z.string(),
    cashflowType: z.string().nullable(),
    records: z.number().int().nonnegative(),
    amount: z.string(),
    amountMinor: z.string().regex(/^-?\d+$/),
  }),
);

const objectSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    key: z.string(),
    dataset: z.enum(DATASETS),
    format: z.enum(FORMATS),
    /** As the manifest's (a part is always `standard`); absent in a part stored before it. */
    csvDialect: z.enum(CSV_DIALECTS).optional(),
    contentType: z.string(),
    records: z.number().int().nonnegative(),
    bytes: z.number().int().nonnegative(),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
  }),
);

/** A part's result as the ledger stores it; read back through this schema (a bad item is a ValidationError naming the field). */
export const partResultSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    index: z.number().int().nonnegative(),
    datasets: z.partialRecord(
      z.enum(DATASETS),
      z.object({
        records: z.number().int().nonnegative(),
        totals: z.array(totalSchema),
        objects: z.array(objectSchema),
        duplicatesDropped: z.number().int().nonnegative().optional(),
        dateTo: dateToSchema.optional(),
      }),
    ),
  }),
);

/** A publish attempt as the ledger stores it (before `refused`, which is kept apart). */
export const publishAttemptSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({ id: z.string().min(1), at: z.number(), from: z.string().optional() }),
);

/** What a split is started with: everything but what its parts and its publish add later. */
export type NewSplit = Omit<SplitRecord, 'done' | 'publishedAt' | 'reportedAt' | 'publishAttempts'>;

export interface PartLedger {
  /** Records a split; on a repeat (`created: false`) the stored split is returned unchanged. */
  startSplit(split: NewSplit): Promise<{ split: SplitRecord; created: boolean }>;
  getSplit(splitId: string): Promise<SplitRecord | undefined>;
  /**
   * Stores the part's result, then adds its index to the done set. Returns the set's size after
   * the addition and the number of parts: `done === parts` means every part is complete.
   */
  completePart(splitId: string, result: PartResult): Promise<{ done: number; parts: number }>;
  /** Every stored part result, by index (strongly consistent). */
  partResults(splitId: string): Promise<PartResult[]>;
  /** Adds a publish attempt to the split, before its manifest write (idempotent by id). */
  recordPublishAttempt(splitId: string, attempt: Omit<PublishAttempt, 'refused'>): Promise<void>;
  /** Marks the attempt refused: its conditional write was rejected, so it changed nothing. */
  refusePublishAttempt(splitId: string, attemptId: string): Promise<void>;
  /** Records that the month's manifest is published; false when it already was. */
  markSplitPublished(splitId: string, at: number): Promise<boolean>;
  /**
   * Records that the published split's event and settle are done; false when it already was. Also
   * sets `publishedAt` when it is missing: a report follows a publish, and the publish's own mark
   * may have failed (docs/fleet-exports.md), so a split once reported is never taken as unpublished.
   */
  markSplitReported(splitId: string, at: number): Promise<boolean>;
}
