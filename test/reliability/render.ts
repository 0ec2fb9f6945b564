import { COLUMN_IDS, COLUMNS, MATRIX, OUTCOMES, ROW_IDS, ROWS, type Cell } from './matrix';

export const BEGIN = '<!-- fault-matrix:begin (generated from test/reliability/matrix.ts; npx tsx test/reliability/write-doc.ts) -->';
export const END = '<!-- fault-matrix:end -->';

const SHORT: Record<keyof typeof OUTCOMES, string> = {
  recovered: 'recovered',
  typed_failure: 'typed failure + event/alarm',
  no_partial_data: 'no partial data',
  consistent: 'consistent',
};

function label(cell: Cell): string {
  switch (cell.kind) {
    case 'test':
      return SHORT[cell.outcome];
    case 'pending':
      return `pending (${SHORT[cell.outcome]})`;
    case 'na':
      return 'n/a';
  }
}

function escape(text: string): string {
  return text.replace(/\|/g, '\\|');
}

/** The generated part of docs/reliability.md: the table, then every cell's one line. */
export function renderMatrix(): string {
  const out: string[] = [BEGIN, ''];
  out.push(`| Fault | ${COLUMN_IDS.map((c) => COLUMNS[c].title).join(' | ')} |`);
  out.push(`|---|${COLUMN_IDS.map(() => '---').join('|')}|`);
  for (const row of ROW_IDS) out.push(`| ${escape(ROWS[row])} | ${COLUMN_IDS.map((c) => label(MATRIX[row][c])).join(' | ')} |`);

  const counts = { test: 0, pending: 0, na: 0 };
  for (const row of ROW_IDS) for (const c of COLUMN_IDS) counts[MATRIX[row][c].kind] += 1;
  out.push('', `${counts.test} cells are tests, ${counts.pending} pending, ${counts.na} n/a.`);

  for (const c of COLUMN_IDS) {
    out.push('', `### ${COLUMNS[c].title}`, '', `Drives ${COLUMNS[c].drives}. Tests: \`test/reliability/${COLUMNS[c].file}\`.`, '');
    for (const row of ROW_IDS) {
      const cell = MATRIX[row][c];
      const text =
        cell.kind === 'test'
          ? `**${OUTCOMES[cell.outcome]}**: ${cell.shows}`
          : cell.kind === 'pending'
            ? `**pending** (${OUTCOMES[cell.outcome]} once it lands: ${cell.shows}): ${cell.reason}`
            : `n/a: ${cell.reason}`;
      out.push(`- ${ROWS[row]}: ${text}`);
    }
  }
  out.push('', END);
  return out.join('\n');
}

/** `document` with its generated part replaced by the current rendering. */
export function withMatrix(document: string): string {
  const begin = document.indexOf(BEGIN);
  const end = document.indexOf(END);
  if (begin < 0 || end < begin) throw new Error('docs/reliability.md lacks the fault-matrix markers');
  return `${document.slice(0, begin)}${renderMatrix()}${document.slice(end + END.length)}`;
}
