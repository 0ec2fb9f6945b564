import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** acctops's version (package.json), recorded in export manifests and printed by --version. */
export const TOOL_VERSION: string = (JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version: string })
  .version;
