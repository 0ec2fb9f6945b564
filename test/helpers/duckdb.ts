import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';

/**
 * An in-memory DuckDB: the suite's reader of our Parquet, CSV and JSONL that shares no code with
 * our writers. Rows come back as JSON (DECIMAL, HUGEINT and dates as text), so tests compare them
 * exactly. Open it in `beforeAll`, close it in `afterAll`.
 */
export class DuckDb {
  private constructor(
    private readonly instance: DuckDBInstance,
    readonly connection: DuckDBConnection,
  ) {}

  static async open(): Promise<DuckDb> {
    const instance = await DuckDBInstance.create(':memory:');
    return new DuckDb(instance, await instance.connect());
  }

  async rows(sql: string): Promise<Record<string, string | null>[]> {
    return (await this.connection.runAndReadAll(sql)).getRowObjectsJson() as Record<string, string | null>[];
  }

  close(): void {
    this.connection.closeSync();
    this.instance.closeSync();
  }
}
