import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { COLUMN_IDS, COLUMNS, MATRIX, ROW_IDS } from './matrix';
import { renderMatrix, withMatrix } from './render';

const DOC = join(__dirname, '..', '..', 'docs', 'reliability.md');

describe('docs/reliability.md', () => {
  it('holds the table the matrix renders (regenerate: npx tsx test/reliability/write-doc.ts)', () => {
    const committed = readFileSync(DOC, 'utf8');
    expect(committed).toContain(renderMatrix());
    expect(withMatrix(committed)).toBe(committed);
  });

  it('has a test file for every column and a reason for every cell that is not a test', () => {
    for (const column of COLUMN_IDS) expect(existsSync(join(__dirname, COLUMNS[column].file))).toBe(true);
    for (const row of ROW_IDS) {
      for (const column of COLUMN_IDS) {
        const cell = MATRIX[row][column];
        if (cell.kind === 'test') expect(cell.shows.length).toBeGreaterThan(20);
        else expect(cell.reason.length).toBeGreaterThan(10);
      }
    }
  });
});
