import { Stack } from 'aws-cdk-lib';
import { CfnDatabase, CfnTable } from 'aws-cdk-lib/aws-glue';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';
import { DATASETS, EARLIEST_PERIOD, EXPORT_LAYOUT, GLUE_COLUMNS, MAX_UTC_OFFSET_HOURS, type DatasetName } from '../../../contract/exports';
import { Grouping } from '../grouping';

export interface ExportCatalogProps {
  readonly stageName: string;
  readonly bucket: IBucket;
}

/** The Glue database of a stage's exports (Athena), named from the stage. */
export function glueDatabaseName(stageName: string): string {
  return `acctops_${stageName.replace(/-/g, '_')}_exports`;
}

/**
 * The months Athena projects `period` over: every month the writers accept, from EARLIEST_PERIOD
 * (a backfill of 2015 must not be published and invisible), to the month that has begun in any time
 * zone. Athena evaluates `NOW` in UTC at query time, and a stage east of UTC may export its
 * current month (refuseFuturePeriod allows it) while UTC is still in the month before: with a bare
 * `NOW`, a Pacific/Auckland stage's December export was invisible for the first 13 hours of December.
 * A month projected with nothing under it costs nothing and returns no rows.
 */
export const PERIOD_PROJECTION_RANGE = `${EARLIEST_PERIOD},NOW+${MAX_UTC_OFFSET_HOURS}HOURS`;

/** The construct id of a dataset's Glue table: `tax_reports` -> `TaxReportsTable`. */
const tableId = (dataset: DatasetName) => `${dataset.replace(/(^|_)([a-z])/g, (_m, _u: string, c: string) => c.toUpperCase())}Table`;

/**
 * The Glue database and one table per dataset, so that Athena queries the Parquet exports. The
 * columns are GLUE_COLUMNS of contract/exports.ts, derived from the columns the writers write.
 */
export class ExportCatalog extends Grouping {
  readonly database: CfnDatabase;
  readonly tables: Record<DatasetName, CfnTable>;

  constructor(scope: Construct, id: string, props: ExportCatalogProps) {
    super(scope, id);
    this.database = new CfnDatabase(this, 'Database', {
      catalogId: Stack.of(this).account,
      databaseInput: {
        name: glueDatabaseName(props.stageName),
        description: 'acctops exports (Parquet through symlinks; docs/exports.md)',
      },
    });
    this.tables = Object.fromEntries(DATASETS.map((dataset) => [dataset, this.glueTable(props.bucket, dataset)])) as Record<
      DatasetName,
      CfnTable
    >;
  }

  /**
   * A Glue table over one dataset's Parquet, read through `<dataset>/_symlink/symlink.txt`
   * (SymlinkTextInputFormat) so that Athena sees exactly the current run of each period; partition
   * projection computes the partitions (no crawler, no MSCK REPAIR): `company` is injected (a query
   * names it), `period` is a month of PERIOD_PROJECTION_RANGE.
   */
  private glueTable(bucket: IBucket, dataset: DatasetName): CfnTable {
    const root = `s3://${bucket.bucketName}/${EXPORT_LAYOUT.root}/`;
    const { company, period } = EXPORT_LAYOUT.partitions;
    return new CfnTable(this, tableId(dataset), {
      catalogId: Stack.of(this).account,
      databaseName: this.database.ref,
      tableInput: {
        name: dataset,
        description: `acctops ${dataset} (docs/exports.md, "Columns"); WHERE ${company} = '<publicId>' is required`,
        tableType: 'EXTERNAL_TABLE',
        partitionKeys: [
          { name: company, type: 'string' },
          { name: period, type: 'string' },
        ],
        parameters: {
          classification: 'parquet',
          EXTERNAL: 'TRUE',
          'projection.enabled': 'true',
          [`projection.${company}.type`]: 'injected',
          [`projection.${period}.type`]: 'date',
          [`projection.${period}.format`]: 'yyyy-MM',
          [`projection.${period}.range`]: PERIOD_PROJECTION_RANGE,
          [`projection.${period}.interval`]: '1',
          [`projection.${period}.interval.unit`]: 'MONTHS',
          'storage.location.template': `${root}${company}=\${${company}}/${period}=\${${period}}/${dataset}/${EXPORT_LAYOUT.symlinkFolder}/`,
        },
        storageDescriptor: {
          location: root,
          inputFormat: 'org.apache.hadoop.hive.ql.io.SymlinkTextInputFormat',
          outputFormat: 'org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat',
          serdeInfo: { serializationLibrary: 'org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe' },
          columns: GLUE_COLUMNS[dataset].map(([name, type]) => ({ name, type })),
        },
      },
    });
  }
}
