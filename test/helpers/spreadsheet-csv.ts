/**
 * A spreadsheet's reading of our CSV, shared by the tests of both dialects (docs/exports.md, "CSV"):
 * it splits on the list separator of its locale and honours quotes only at the start of a field.
 */

/**
 * How a spreadsheet reads a CSV with `separator` as its list separator: a field is quoted only
 * when it starts with a quote (RFC 4180 inside); elsewhere quotes are plain characters.
 */
export function parseSpreadsheetCsv(text: string, separator: string): string[][] {
  const ends = (c: string) => c === separator || c === '\r' || c === '\n';
  const rows: string[][] = [];
  let row: string[] = [];
  let i = 0;
  while (i < text.length) {
    let cell = '';
    if (text[i] === '"') {
      i++;
      for (;;) {
        if (i >= text.length) break;
        if (text[i] === '"') {
          if (text[i + 1] === '"') {
            cell += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        cell += text[i++];
      }
      // Anything between the closing quote and the next separator is appended as is.
      while (i < text.length && !ends(text[i]!)) cell += text[i++];
    } else {
      while (i < text.length && !ends(text[i]!)) cell += text[i++];
    }
    row.push(cell);
    if (text[i] === separator) {
      i++;
    } else {
      // CRLF, or a lone CR or LF: each ends a row outside a quoted field.
      i += text[i] === '\r' && text[i + 1] === '\n' ? 2 : 1;
      rows.push(row);
      row = [];
    }
  }
  return rows;
}

/**
 * The cells a spreadsheet would run: a formula character first, after whitespace and quotes it
 * skips (or a tab or CR first, OWASP's other two); numbers such as `-49.99` are numbers, and so are
 * `-49,99` of the `excel-de` dialect, which a German spreadsheet reads as one.
 */
export function formulaCells(rows: readonly (readonly string[])[]): string[] {
  return rows.flat().filter((cell) => (/^[\s"]*[=+\-@]/.test(cell) || /^[\t\r]/.test(cell)) && !/^-?\d+([.,]\d+)?$/.test(cell));
}
