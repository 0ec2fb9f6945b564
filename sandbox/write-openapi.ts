// `npm run openapi`: writes docs/openapi.yaml from the sandbox's routes and zod schemas.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderOpenApiYaml } from './openapi';

export const OPENAPI_PATH = join(__dirname, '..', 'docs', 'openapi.yaml');

if (require.main === module) {
  writeFileSync(OPENAPI_PATH, renderOpenApiYaml());
  process.stdout.write(`wrote ${OPENAPI_PATH}\n`);
}
