import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { withMatrix } from './render';

// Rewrites the generated table of docs/reliability.md from test/reliability/matrix.ts.
const path = join(__dirname, '..', '..', 'docs', 'reliability.md');
writeFileSync(path, withMatrix(readFileSync(path, 'utf8')));
process.stdout.write(`wrote ${path}\n`);
