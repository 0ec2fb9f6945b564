import type { JsonText } from '../../accounting-api';
import type { Clock } from '../../shared/clock';
import { ValidationError } from '../../shared/errors';
import type { Logger } from '../../shared/logger';
import { DEFAULT_CURRENCY } from './currency';
import { FormatLossError, PeriodExportError } from './period-errors';
import { assertCompanyId, assertRunId, dataKey, manifestKey, newRunId } from './layout';
import {
  droppedFormats,
  MANIFEST_SCHEMA_VERSION,
  readManifest,
  type Manifest,
  type ManifestDataset,
  type ManifestObject,
  type ManifestTrigger,
} from './manifest';
import { ObjectSink, type WrittenObject } from './object-sink';
import type { ObjectStore } from './object-store';
import { parsePeriod, periodRange, type Period } from './period';
import { collectGarbage, publishPeriod } from './publish';
import { categoriesTable, taxReportsTable, transactionsTable, type Row, type RowContext, type Table } from './dataset-tables';
import { TotalsAccumulator, type AmountTotal } from './totals';
import {
  CSV_DIALECTS,
  DATASETS,
  FORMATS,
  type CsvDialect,
  type DatasetName,
  type DateToReading,
  type ExportFormat,
  type ExportSources,
  type PagedSource,
  type SourcePage,
} from './datasets';
import { createWriter, FORMAT_FILES } from './writers';
import type { TaxReportFieldNames } from './tax-report-fields';

export interface PeriodExporterDeps {
  store: ObjectStore;
  clock: Clock;
  logger: Logger;
  /** acctops's version, recorded in the manifest. */
  toolVersion: string;
  /** Run id generator; the default is `<UTC time>-<random>`. Ids must never repeat. */
  runIds?: () => string;
  /** Currency of transactions the API sent without one (docs/assumptions.md); DEFAULT_CURRENCY when absent. */
  defaultCurrency?: string;
  /** Age after which an unreferenced run object counts as abandoned. Must exceed the longest run. */
  gcGraceMs?: number;
  parquetRowGroupRows?: number;
  /** The service's names of our tax-report fields, where they differ (tax-report-fields.ts). */
  taxReportFields?: TaxReportFieldNames;
}

export interface PeriodExportRequest {
  /** The company's publicId. */
  company: string;
  /** `YYYY-MM` or a parsed Period. */
  period: string | Period;
  /** One stream per dataset, each read once. Categories are also read to resolve names. */
  sources: ExportSources;
  /** Datasets to (re)write; default: every source given. Others keep their previous export. */
  datasets?: readonly DatasetName[];
  formats: readonly ExportFormat[];
  /**
   * Allow a re-export with fewer formats than the period's current export of a dataset has: the
   * other formats' files are then deleted. Without it such a run is refused (FormatLossError)
   * before anything is read, so a `--format csv` re-export never silently removes the Parquet.
   */
  replaceFormats?: boolean;
  /**
   * How the CSV is spelt (default `standard`). `excel-de` is refused for an `s3://` store: the
   * bucket's readers expect the standard CSV (decision 95). A re-export in another dialect replaces
   * the period's CSV like any re-export; the manifest names each CSV object's dialect.
   */
  csvDialect?: CsvDialect;
  /** The service's base URL, recorded in the manifest (credentials, query and fragment dropped). */
  sourceBaseUrl: string;
  /** What the pipeline runs this export for, recorded in the manifest; absent outside the pipeline. */
  trigger?: ManifestTrigger;
}

export interface DatasetSummary {
  records: number;
  totals: AmountTotal[];
  objects: ManifestObject[];
  /**
   * Of `records`, those with no date to place them in a month, kept in every month's export (tax
   * reports whose period the service names otherwise: `taxReportFields`); absent when none.
   */
  undated?: number;
  /**
   * Of `records`, those with an amount but no currency acctops could read: no currency and no
   * decimal amount in the files, left out of the totals (tax reports whose currency the service
   * names otherwise: `taxReportFields`); absent when none.
   */
  withoutCurrency?: number;
  /**
   * Of `records`, those the service sent without a currency, labelled with the exporter's
   * `defaultCurrency` in every file and in the totals (transactions: the spec names no currency
   * field); absent when none.
   */
  withDefaultCurrency?: number;
  /**
   * Records the service sent again on the next page (or twice on one), left out of the files and
   * the totals: the list moved while it was read (Page.duplicatesDropped). Not in `records`; in the
   * manifest; absent when none.
   */
  duplicatesDropped?: number;
  /**
   * Of `records`, transactions whose local date of `valueDate` is outside the month, which the
   * service returned for it: kept, since the service decides what its filter matches. In the
   * manifest; absent when none (and in a part of a split month, which keeps only its own days).
   */
  outsidePeriod?: number;
  /**
   * Transactions only: how the source read `date_to` (ExportSources.transactionsDateTo), in the
   * manifest; absent when the source does not say.
   */
  dateTo?: DateToReading;
}

export interface PeriodExportSummary {
  company: string;
  period: string;
  runId: string;
  manifestKey: string;
  /** Where a foreign reader finds the manifest (`s3://…` or `file://…`). */
  manifestUrl: string;
  generatedAt: string;
  /** The datasets this run wrote. */
  datasets: Partial<Record<DatasetName, DatasetSummary>>;
  /** Datasets kept from the previous export because this run did not include them. */
  carriedOver: DatasetName[];
  /** Objects of earlier runs deleted after the switch. */
  garbageCollected: number;
  /**
   * Datasets whose Athena symlink could not be rewritten after the publish: Athena still shows
   * their previous export until the period is exported again (docs/exports.md, "Atomic periods").
   */
  staleSymlinks: DatasetName[];
  /** As committed, its symlinks included. */
  manifest: Manifest;
  /** The currency of the transactions the service sent without one (`withDefaultCurrency` counts them). */
  defaultCurrency: string;
  /**
   * Set by the pipeline when the service read `date_to` as exclusive, so the month's last day was
   * read on its own (src/core/exports/pipeline/date-to.ts); absent otherwise.
   */
  dateToExclusive?: boolean;
}

/** One part of a month split by date range (docs/fleet-exports.md): written, not published. */
export interface StagePartRequest {
  company: string;
  period: Period;
  /** The split's run id: every part writes into the same `run=` folder, where no reader looks. */
  runId: string;
  /** The part's file number (`part-0000N`). */
  part: number;
  /** The part's transaction days (inclusive): rows of other days are left out, so parts never overlap. */
  range: { dateFrom: string; dateTo: string };
  sources: ExportSources;
  datasets: readonly DatasetName[];
  formats: readonly ExportFormat[];
}

export type StagedPart = Partial<Record<DatasetName, DatasetSummary>>;

export const DEFAULT_GC_GRACE_MS = 24 * 60 * 60 * 1000;

/** Reads in this order so that category names are known before the first transaction. */
const ORDER: readonly DatasetName[] = ['categories', 'tax_reports', 'transactions'];

type Item = { raw: unknown; json?: JsonText | undefined };

/**
 * Exports one company's month: every selected dataset streams once through the selected writers
 * (bounded memory, backpressure from the store), the totals are summed exactly, and the period is
 * switched over atomically by its manifest. On any failure the previous export of the period is
 * untouched and this run's objects are removed (docs/exports.md, "Atomic periods").
 */
export class PeriodExporter {
  private readonly runIds: () => string;
  private readonly defaultCurrency: string;
  private readonly gcGraceMs: number;

  constructor(private readonly deps: PeriodExporterDeps) {
    this.runIds = deps.runIds ?? (() => newRunId(deps.clock));
    this.defaultCurrency = deps.defaultCurrency ?? DEFAULT_CURRENCY;
    this.gcGraceMs = deps.gcGraceMs ?? DEFAULT_GC_GRACE_MS;
  }

  async run(request: PeriodExportRequest): Promise<PeriodExportSummary> {
    const period = typeof request.period === 'string' ? parsePeriod(request.period) : request.period;
    const { company } = request;
    assertCompanyId(company);
    const formats = checkFormats(request.formats);
    const csvDialect = checkCsvDialect(request.csvDialect, this.deps.store.url(manifestKey(company, period)));
    const selected = checkDatasets(request);
    const baseUrl = sanitizeBaseUrl(request.sourceBaseUrl);
    const runId = this.runIds();
    assertRunId(runId);

    const { store, clock } = this.deps;
    const logger = this.deps.logger.child({ company, period: period.text, runId });
    const key = manifestKey(company, period);
    const written: WrittenObject[] = [];
    logger.info('period export started', { datasets: selected, formats, ...(csvDialect !== 'standard' ? { csvDialect } : {}) });

    try {
      const expected = await store.head(key);
      const previous = expected ? await readManifest(store, key) : undefined;
      if (previous && (previous.runId === runId || Object.values(previous.datasets).some((d) => d.runId === runId))) {
        // Reusing a run id would overwrite objects the live manifest references.
        throw new ValidationError('export request', [{ path: 'runId', message: 'already used by the current export of this period' }]);
      }
      if (previous && !request.replaceFormats) {
        const dropped = droppedFormats(previous, selected, formats);
        if (dropped.length > 0) throw new FormatLossError(dropped);
      }

      const range = periodRange(period);
      const categoryNames = new Map<string, string | null>();
      let outsidePeriod = 0;
      const onRow: Partial<Record<DatasetName, (row: Row) => void>> = {
        categories: (row) => categoryNames.set(row.public_id as string, row.name as string | null),
        transactions: (row) => {
          const day = row.value_date_local as string;
          if (day < range.dateFrom || day > range.dateTo) outsidePeriod += 1;
        },
      };
      const results = new Map<DatasetName, DatasetResult>();
      for (const dataset of ORDER) {
        const source = sourceOf(request.sources, dataset);
        const wanted = selected.includes(dataset);
        // Categories are read for their names even when they are not exported themselves.
        if (!source || (!wanted && !(dataset === 'categories' && selected.includes('transactions')))) continue;
        const job = {
          company,
          period,
          range,
          runId,
          dataset,
          formats: wanted ? formats : [],
          csvDialect,
          categoryNames,
          onRow: onRow[dataset],
        };
        const result = await this.exportDataset(job, source, written, logger);
        if (wanted) results.set(dataset, result);
      }
      const transactions = results.get('transactions');
      const dateTo = transactions ? request.sources.transactionsDateTo?.() : undefined;
      if (transactions && dateTo) transactions.dateTo = dateTo;
      if (transactions && outsidePeriod > 0) {
        // Exported as returned: the API decides what belongs to the range; the count says it disagreed.
        transactions.outsidePeriod = outsidePeriod;
        logger.warn('transactions dated outside the queried range, kept', { records: outsidePeriod, ...range });
      }

      const generatedAt = new Date(clock.now()).toISOString();
      const manifest = buildManifest({
        company,
        period,
        runId,
        generatedAt,
        toolVersion: this.deps.toolVersion,
        baseUrl,
        range,
        results,
        previous,
        trigger: request.trigger,
      });
      const published = await publishPeriod({
        store,
        company,
        period,
        manifest,
        expected,
        previous,
        now: clock.now(),
        gcGraceMs: this.gcGraceMs,
        logger,
      });
      const carriedOver = DATASETS.filter((d) => manifest.datasets[d] && !results.has(d));
      logger.info('period export published', {
        manifestKey: published.manifestKey,
        records: Object.fromEntries([...results].map(([d, r]) => [d, r.records])),
        carriedOver,
        garbageCollected: published.deleted.length,
        ...(published.staleSymlinks.length > 0 ? { staleSymlinks: published.staleSymlinks } : {}),
      });
      return {
        company,
        period: period.text,
        runId,
        manifestKey: published.manifestKey,
        manifestUrl: store.url(published.manifestKey),
        generatedAt,
        datasets: Object.fromEntries(
          [...results].map(([d, r]) => [
            d,
            {
              records: r.records,
              totals: r.totals,
              objects: manifest.objects.filter((o) => o.dataset === d),
              ...(r.undated > 0 ? { undated: r.undated } : {}),
              ...(r.withoutCurrency > 0 ? { withoutCurrency: r.withoutCurrency } : {}),
              ...(r.withDefaultCurrency > 0 ? { withDefaultCurrency: r.withDefaultCurrency } : {}),
              ...(r.duplicatesDropped > 0 ? { duplicatesDropped: r.duplicatesDropped } : {}),
              ...(r.outsidePeriod > 0 ? { outsidePeriod: r.outsidePeriod } : {}),
              ...(r.dateTo ? { dateTo: r.dateTo } : {}),
            },
          ]),
        ),
        carriedOver,
        garbageCollected: published.deleted.length,
        staleSymlinks: published.staleSymlinks,
        manifest: published.manifest,
        defaultCurrency: this.defaultCurrency,
      };
    } catch (error) {
      await this.removeObjects(company, period, written, logger);
      // INFO: the caller logs the outcome, with the error, at the level only it knows (a retry, or the failure that stays).
      logger.info('period export failed; the previous export of the period is unchanged', { error });
      throw new PeriodExportError({ company, period: period.text, runId }, error);
    }
  }

  /**
   * Writes one part of a split month and returns what the finishing step needs for the manifest
   * (src/core/exports/pipeline/split-export.ts). Nothing is published; on failure the part's objects are
   * removed by the garbage rule.
   */
  async stage(request: StagePartRequest): Promise<StagedPart> {
    const { company, period, runId, part } = request;
    assertCompanyId(company);
    assertRunId(runId);
    const formats = checkFormats(request.formats);
    const logger = this.deps.logger.child({ company, period: period.text, runId, part });
    const month = periodRange(period);
    const written: WrittenObject[] = [];
    const categoryNames = new Map<string, string | null>();
    const staged: StagedPart = {};
    try {
      for (const dataset of ORDER) {
        const source = sourceOf(request.sources, dataset);
        const wanted = request.datasets.includes(dataset);
        if (!source || (!wanted && !(dataset === 'categories' && request.datasets.includes('transactions')))) continue;
        const onRow =
          dataset === 'categories' ? (row: Row) => void categoryNames.set(row.public_id as string, row.name as string | null) : undefined;
        const range = dataset === 'transactions' ? request.range : month;
        // A whole month keeps what the API returned (and warns); a part keeps only its own days,
        // so a server that ignores the date filter cannot make two parts count one record.
        const belongs = dataset === 'transactions' ? transactionOfDays : undefined;
        const job = { company, period, range, runId, part, dataset, formats: wanted ? formats : [], categoryNames, onRow, belongs };
        const result = await this.exportDataset(job, source, written, logger);
        const dateTo = dataset === 'transactions' ? request.sources.transactionsDateTo?.() : undefined;
        if (dateTo) result.dateTo = dateTo;
        if (wanted) staged[dataset] = result;
      }
      return staged;
    } catch (error) {
      await this.removeObjects(company, period, written, logger);
      logger.info('export part failed', { error });
      throw new PeriodExportError({ company, period: period.text, runId }, error);
    }
  }

  /**
   * One pass over `source`: each record is validated and flattened once, added to the totals and
   * handed to every writer in turn, waiting whenever a writer's upload needs to catch up.
   */
  private async exportDataset(
    job: {
      company: string;
      period: Period;
      range: { dateFrom: string; dateTo: string };
      runId: string;
      /** File number of a split month's part; 0 for a whole month. */
      part?: number;
      dataset: DatasetName;
      formats: readonly ExportFormat[];
      /** Default `standard`: a split month's parts (the deployed pipeline) are always standard. */
      csvDialect?: CsvDialect;
      categoryNames: ReadonlyMap<string, string | null>;
      onRow: ((row: Row) => void) | undefined;
      /** Which rows to keep, instead of the table's own rule. */
      belongs?: Table<Item>['belongs'];
    },
    source: AsyncIterable<Item> | Iterable<Item>,
    written: WrittenObject[],
    logger: Logger,
  ): Promise<DatasetResult> {
    const table = TABLES[job.dataset] as Table<Item>;
    const belongs = job.belongs ?? table.belongs;
    const csvDialect = job.csvDialect ?? 'standard';
    const outputs = job.formats.map((format) => {
      const sink = new ObjectSink(
        this.deps.store,
        dataKey(job.company, job.period, job.dataset, job.runId, format, job.part),
        FORMAT_FILES[format].contentType,
      );
      return {
        format,
        writer: createWriter(format, sink, table.columns, {
          parquetRowGroupRows: this.deps.parquetRowGroupRows,
          cells: table.cells,
          csvDialect,
        }),
      };
    });
    const totals = table.totals ? new TotalsAccumulator(table.totals) : undefined;
    let unresolved = 0;
    let records = 0;
    let elsewhere = 0;
    /** Records without the API's text: their JSONL line is JSON.stringify of the parsed object. */
    let serialised = 0;
    /** Records with no date to place them in a month (the table's `undated`): kept in every month. */
    let undated = 0;
    /** Records with an amount but no currency (the table's `withoutCurrency`): not in the totals. */
    let withoutCurrency = 0;
    /** Records sent without a currency, labelled with the default (the table's `tookDefaultCurrency`). */
    let withDefaultCurrency = 0;
    /** Repeats the source already left out (Page.duplicatesDropped): counted, never written. */
    let duplicatesDropped = 0;
    const context: RowContext & { index: number } = {
      index: 0,
      defaultCurrency: this.defaultCurrency,
      // This job's formats, not the period's: a dataset another run wrote to Parquet is carried
      // over, not written again, and categories read only for their names are written nowhere.
      parquet: job.formats.includes('parquet'),
      // An empty mapping is our own names: the client's parse stands.
      taxReportFields: Object.keys(this.deps.taxReportFields ?? {}).length > 0 ? this.deps.taxReportFields : undefined,
      // Only CSV and Parquet have a category_name column: JSONL alone needs no lookup a record.
      categoryName: job.formats.some((format) => format !== 'jsonl')
        ? (id) => {
            const name = job.categoryNames.get(id);
            if (name === undefined) unresolved += 1;
            return name ?? null;
          }
        : () => null,
    };

    try {
      for await (const batch of batchesOf(source)) {
        if (batch.duplicatesDropped) duplicatesDropped += batch.duplicatesDropped;
        // Indexed loops: in this async function V8 kept `for…of`'s iterator results, ~120 bytes of
        // garbage a record (sampling heap profile, 2026-11-26).
        const items = batch.items;
        for (let k = 0; k < items.length; k++) {
          const item = items[k]!;
          const row = table.row(item, context);
          context.index += 1;
          if (belongs && !belongs(row, job.range)) {
            elsewhere += 1;
            continue;
          }
          records += 1;
          if (item.json === undefined) serialised += 1;
          if (table.undated?.(row)) undated += 1;
          if (table.withoutCurrency?.(row)) withoutCurrency += 1;
          if (table.tookDefaultCurrency?.(item)) withDefaultCurrency += 1;
          totals?.add(row);
          job.onRow?.(row);
          for (let o = 0; o < outputs.length; o++) {
            const wait = outputs[o]!.writer.write(item.raw, row, item.json);
            if (wait) await wait;
          }
        }
      }
    } catch (error) {
      await Promise.all(outputs.map((o) => o.writer.abort(error)));
      throw error;
    }

    const finished = await Promise.allSettled(outputs.map((o) => o.writer.finish()));
    const objects: ManifestObject[] = [];
    let failure: { error: unknown } | undefined;
    finished.forEach((outcome, i) => {
      if (outcome.status === 'fulfilled') {
        written.push(outcome.value);
        const format = outputs[i]!.format;
        objects.push({ ...outcome.value, dataset: job.dataset, format, ...(format === 'csv' ? { csvDialect } : {}), records });
      } else {
        failure ??= { error: outcome.reason };
      }
    });
    if (failure) {
      await Promise.all(outputs.map((o) => o.writer.abort(failure!.error)));
      throw failure.error;
    }

    if (unresolved > 0)
      logger.warn('transactions reference unknown categories; category_name left empty', { dataset: job.dataset, records: unresolved });
    if (elsewhere > 0) logger.info('records outside the range left out', { dataset: job.dataset, records: elsewhere, ...job.range });
    if (undated > 0) {
      // A service whose reports carry their period under names the spec does not show looks like
      // this: every month then holds every report (docs/exports.md, "Tax reports of a period").
      logger.warn('records without a date to place them in a month, kept in every month', {
        dataset: job.dataset,
        records: undated,
        hint: "if the service names the period otherwise, set the stage's exports.taxReportFields (or --tax-report-fields)",
      });
    }
    if (withoutCurrency > 0) {
      // Labelling them with a default would be a guess the spec does not back (docs/exports.md,
      // "Tax reports of a period"): the files say nothing rather than something wrong.
      logger.warn('records with an amount but no currency, written without currency or decimal amount and left out of the totals', {
        dataset: job.dataset,
        records: withoutCurrency,
        hint: "if the service names the currency otherwise, set the stage's exports.taxReportFields (or --tax-report-fields currency=<its field>)",
      });
    }
    if (withDefaultCurrency > 0) {
      // Right for the spec's EUR world, silently wrong for a GBP company: say how many, and how to
      // set it (docs/exports.md, "A transaction's currency").
      logger.warn('records without a currency, labelled with the default currency', {
        dataset: job.dataset,
        records: withDefaultCurrency,
        currency: this.defaultCurrency,
        hint: "if the company's currency is another: acctops companies add --company <id> --default-currency <ISO code>",
      });
    }
    if (duplicatesDropped > 0) {
      // Written once, as first sent; the client warned of each (docs/exports.md, "Records repeated across pages").
      logger.warn('records the service sent again on a later page, written once', { dataset: job.dataset, records: duplicatesDropped });
    }
    if (serialised > 0 && job.formats.includes('jsonl')) {
      // Their lines follow JSON.stringify's spelling, not the API's (docs/exports.md, "Raw JSONL.gz").
      logger.info('records serialised for JSONL', { dataset: job.dataset, records: serialised });
    }
    logger.info('dataset exported', { dataset: job.dataset, records, objects: objects.length });
    return {
      records,
      totals: totals?.result() ?? [],
      objects,
      undated,
      withoutCurrency,
      withDefaultCurrency,
      duplicatesDropped,
      outsidePeriod: 0,
    };
  }

  /**
   * Removes the failed run's completed objects by the garbage rule: whatever the manifest
   * references stays (a manifest write that failed without an answer may have been made).
   */
  private async removeObjects(company: string, period: Period, objects: readonly WrittenObject[], logger: Logger): Promise<void> {
    if (objects.length === 0) return;
    try {
      await collectGarbage(this.deps.store, company, period, {
        now: this.deps.clock.now(),
        graceMs: this.gcGraceMs,
        superseded: new Set(objects.map((o) => o.key)),
        logger,
      });
    } catch (error) {
      // Unreferenced run objects: a later run's garbage collection removes them.
      logger.warn('could not remove the objects of the failed run', { objects: objects.length, error });
    }
  }
}

/** A transaction of the range's days, by the calendar date of its value date in its own offset. */
function transactionOfDays(row: Row, range: { dateFrom: string; dateTo: string }): boolean {
  const day = row.value_date_local as string;
  return day >= range.dateFrom && day <= range.dateTo;
}

interface DatasetResult {
  records: number;
  totals: AmountTotal[];
  objects: ManifestObject[];
  undated: number;
  withoutCurrency: number;
  withDefaultCurrency: number;
  duplicatesDropped: number;
  /** Set by `run` for a whole month's transactions. */
  outsidePeriod: number;
  /** Set for transactions whose source says how it read `date_to`. */
  dateTo?: DateToReading;
}

const TABLES: Record<DatasetName, Table<never>> = {
  transactions: transactionsTable,
  tax_reports: taxReportsTable,
  categories: categoriesTable,
};

/**
 * The source's items a page at a time when it can hand over pages (a PaginatedList, or
 * exportSources' progress wrapper): one await per page instead of one per record, which an
 * async generator of items costs (~0.1 µs and three promises a record). Any other iterable
 * is read one item per batch.
 */
function batchesOf(source: AsyncIterable<Item> | Iterable<Item>): AsyncIterable<SourcePage<Item>> | Iterable<SourcePage<Item>> {
  if (isPaged(source)) return source.pages();
  if (Symbol.asyncIterator in source) {
    return {
      async *[Symbol.asyncIterator]() {
        for await (const item of source) yield { items: [item] };
      },
    };
  }
  return {
    *[Symbol.iterator]() {
      for (const item of source) yield { items: [item] };
    },
  };
}

function isPaged(source: object): source is PagedSource<Item> {
  return typeof (source as Partial<PagedSource<Item>>).pages === 'function';
}

function sourceOf(sources: ExportSources, dataset: DatasetName): AsyncIterable<Item> | Iterable<Item> | undefined {
  switch (dataset) {
    case 'transactions':
      return sources.transactions;
    case 'tax_reports':
      return sources.taxReports;
    case 'categories':
      return sources.categories;
  }
}

/**
 * The request's CSV dialect. `excel-de` never goes to S3: a bucket is where programs read the
 * exports (DuckDB, Spark or a script over every period's `*.csv`), which expect one dialect, the
 * standard one; the CLI refuses it there first, with its flags named (decision 95).
 */
function checkCsvDialect(dialect: CsvDialect | undefined, url: string): CsvDialect {
  if (dialect === undefined || dialect === 'standard') return 'standard';
  if (!(CSV_DIALECTS as readonly string[]).includes(dialect)) {
    throw new ValidationError('export request', [{ path: 'csvDialect', message: `expected one of ${CSV_DIALECTS.join(', ')}` }]);
  }
  if (url.startsWith('s3://')) {
    throw new ValidationError('export request', [
      {
        path: 'csvDialect',
        message: `${dialect} is written only to a local directory, never to S3 (whose readers expect the standard CSV)`,
      },
    ]);
  }
  return dialect;
}

function checkFormats(formats: readonly ExportFormat[]): ExportFormat[] {
  const unique = FORMATS.filter((f) => formats.includes(f));
  if (unique.length === 0 || formats.some((f) => !FORMATS.includes(f))) {
    throw new ValidationError('export request', [{ path: 'formats', message: `expected one or more of ${FORMATS.join(', ')}` }]);
  }
  return unique;
}

function checkDatasets(request: PeriodExportRequest): DatasetName[] {
  const given = DATASETS.filter((d) => sourceOf(request.sources, d) !== undefined);
  const wanted = request.datasets ?? given;
  const selected = DATASETS.filter((d) => wanted.includes(d));
  if (selected.length === 0 || wanted.some((d) => !given.includes(d))) {
    throw new ValidationError('export request', [
      { path: 'datasets', message: 'each selected dataset needs a source, and at least one is required' },
    ]);
  }
  return selected;
}

/** The base URL without anything that could be a credential: user info, query, fragment. */
export function sanitizeBaseUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch (error) {
    throw new ValidationError('export request', [{ path: 'sourceBaseUrl', message: 'expected an absolute URL' }], error);
  }
  return `${url.origin}${url.pathname}`;
}

function buildManifest(input: {
  company: string;
  period: Period;
  runId: string;
  generatedAt: string;
  toolVersion: string;
  baseUrl: string;
  range: { dateFrom: string; dateTo: string };
  results: ReadonlyMap<DatasetName, DatasetResult>;
  previous: Manifest | undefined;
  trigger: ManifestTrigger | undefined;
}): Manifest {
  const datasets: Partial<Record<DatasetName, ManifestDataset>> = {};
  const objects: ManifestObject[] = [];
  for (const dataset of DATASETS) {
    const result = input.results.get(dataset);
    if (result) {
      datasets[dataset] = {
        runId: input.runId,
        generatedAt: input.generatedAt,
        records: result.records,
        totals: result.totals,
        ...(result.duplicatesDropped > 0 ? { duplicatesDropped: result.duplicatesDropped } : {}),
        ...(result.outsidePeriod > 0 ? { outsidePeriod: result.outsidePeriod } : {}),
        ...(result.dateTo ? { dateTo: result.dateTo } : {}),
      };
      objects.push(...result.objects);
    } else if (input.previous?.datasets[dataset]) {
      datasets[dataset] = input.previous.datasets[dataset];
      objects.push(...input.previous.objects.filter((o) => o.dataset === dataset));
    }
  }
  const carriedParts = input.results.has('transactions') ? undefined : input.previous?.source.parts;
  return {
    schemaVersion: MANIFEST_SCHEMA_VERSION,
    company: input.company,
    period: input.period.text,
    runId: input.runId,
    generatedAt: input.generatedAt,
    tool: { name: 'acctops', version: input.toolVersion },
    ...(input.trigger ? { trigger: input.trigger } : {}),
    source: {
      baseUrl: input.baseUrl,
      query: input.range,
      // `parts` describes how the transactions were read: it stays with them when they are carried
      // over from a month exported in parts, and goes when this run reads them whole.
      ...(carriedParts === undefined ? {} : { parts: carriedParts }),
    },
    datasets,
    objects: objects.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)),
    // publishPeriod derives every dataset's from `objects`.
    symlinks: [],
  };
}
