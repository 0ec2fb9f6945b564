import type { CheckMonthlyExportDeps } from '../../core/exports/pipeline/monthly-export';
import { AwsExportRuntime, type Scope } from './export-runtime';
import { exportLedger } from './export-runtime-dynamodb';
import { exportEvents } from './export-runtime-events';
import { exportStore } from './export-runtime-s3';

/** check-monthly-export's root: the ledger, the bucket it looks for manifests in, the bus it alerts on. */
export class AwsExportOverdueRuntime extends AwsExportRuntime {
  /** checkMonthlyExport's deps, with this invocation's logger and metrics. */
  overdueDeps(scope: Scope): CheckMonthlyExportDeps {
    return { ledger: exportLedger(this), store: exportStore(this), events: exportEvents(this), clock: this.config.clock, ...scope };
  }
}
