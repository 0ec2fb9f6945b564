import { COLUMNS, MATRIX, OUTCOMES, ROW_IDS, ROWS, type ColumnId, type Outcome, type RowId } from './matrix';

/** One cell's test: it asserts what the cell claims and returns the outcome it demonstrated. */
export type CellTest = () => Promise<Outcome>;

/**
 * Registers the column's cells as jest tests, in row order, from the matrix (./matrix.ts):
 * a `test` cell runs its implementation and checks that it demonstrated the cell's outcome; a
 * `pending` cell is a test.todo; an `n/a` cell registers nothing. An implementation for a cell that
 * the matrix calls n/a or pending, or a `test` cell without one, fails: the document and the tests
 * cannot drift apart.
 */
export function matrixColumn(column: ColumnId, implementations: Partial<Record<RowId, CellTest>>): void {
  describe(`fault matrix: ${COLUMNS[column].title}`, () => {
    for (const row of ROW_IDS) {
      const cell = MATRIX[row][column];
      const implementation = implementations[row];
      if (cell.kind === 'test') {
        it(`${ROWS[row]} -> ${OUTCOMES[cell.outcome]}: ${cell.shows}`, async () => {
          if (!implementation) throw new Error(`matrix cell ${row} x ${column} is a test but has no implementation`);
          await expect(implementation()).resolves.toBe(cell.outcome);
        });
      } else if (cell.kind === 'pending') {
        if (implementation) {
          it(`${ROWS[row]}: implemented but still marked pending in the matrix`, () => {
            throw new Error(`matrix cell ${row} x ${column}: mark it a test in test/reliability/matrix.ts`);
          });
        } else {
          it.todo(`${ROWS[row]} -> ${OUTCOMES[cell.outcome]}: ${cell.shows} (pending: ${cell.reason})`);
        }
      } else if (implementation) {
        it(`${ROWS[row]}: implemented but n/a in the matrix`, () => {
          throw new Error(`matrix cell ${row} x ${column} is n/a (${cell.reason}) but has an implementation`);
        });
      }
    }
  });
}
