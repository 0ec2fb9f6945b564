import * as z from 'zod';
import { stringify } from 'yaml';
import { routes, type RouteDef } from './routes';
import { wireRegistry } from './schemas';

/**
 * The OpenAPI 3.1 document of the API as the sandbox serves it, generated from the same route
 * table and zod schemas the server runs on. `npm run openapi` writes docs/openapi.yaml; a test
 * fails when the committed file differs from what this produces.
 */

const REF = '#/components/schemas/';

/** Keeps the document readable and open: formats instead of regexes, no closed objects, no JS integer bounds. */
function tidy({ jsonSchema }: { jsonSchema: Record<string, unknown> }): void {
  if (jsonSchema.format !== undefined) delete jsonSchema.pattern;
  if (jsonSchema.additionalProperties === false) delete jsonSchema.additionalProperties;
  if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
  if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
}

function componentSchemas(): Record<string, unknown> {
  const generated = z.toJSONSchema(wireRegistry, { uri: (id) => `${REF}${id}`, io: 'input', override: tidy as never }).schemas;
  const out: Record<string, unknown> = {};
  for (const [id, schema] of Object.entries(generated).sort(([a], [b]) => a.localeCompare(b))) {
    const { $schema: _s, $id: _i, ...rest } = schema as Record<string, unknown>;
    out[id] = rest;
  }
  return out;
}

function inline(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _s, ...rest } = z.toJSONSchema(schema, { io: 'input', override: tidy as never }) as Record<string, unknown>;
  return rest;
}

function ref(schema: z.ZodType): { $ref: string } {
  const id = wireRegistry.get(schema)?.id;
  if (!id) throw new Error('a route schema is not registered in wireRegistry');
  return { $ref: `${REF}${id}` };
}

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'validation_error (invalid_request, param names the field) or invalid_grant (refresh token refused).',
  401: 'authentication_error: missing or invalid credential, expired or revoked key or token, disabled creator, lost company access.',
  403: 'permission_error (permission names what is missing) or company_mismatch_error (param names where).',
  404: 'not_found_error, including a page past the last.',
  409: 'conflict_error: the user exists (user_exists) or the state prevents the change.',
  429: 'rate_limit_error; Retry-After gives whole seconds to wait.',
  500: 'api_error (internal_error).',
  502: 'api_error (bad_gateway).',
  503: 'api_error (unavailable).',
};

const requestIdHeader = { $ref: '#/components/headers/X-Request-Id' };

function operation(route: RouteDef): Record<string, unknown> {
  const parameters: unknown[] = [];
  for (const name of route.path.match(/\{(\w+)\}/g) ?? []) {
    parameters.push({ name: name.slice(1, -1), in: 'path', required: true, schema: { type: 'string', format: 'uuid' } });
  }
  if (route.list) {
    const { pageSizeParam, defaultPageSize } = route.list;
    parameters.push({ $ref: '#/components/parameters/page' });
    parameters.push({
      name: pageSizeParam,
      in: 'query',
      required: false,
      description: `Items per page (this resource's spelling); default ${defaultPageSize}, above 1000 clamped to 1000. The other spelling is ignored.`,
      schema: { type: 'integer', minimum: 1, default: defaultPageSize },
    });
  }
  for (const q of route.query ?? [])
    parameters.push({ name: q.name, in: 'query', required: false, description: q.description, schema: inline(q.schema) });
  if (route.auth === 'bearer') parameters.push({ $ref: '#/components/parameters/X-Company-Id' });

  const success: Record<string, unknown> = { description: route.success.description, headers: { 'X-Request-Id': requestIdHeader } };
  if (route.success.schema) success.content = { 'application/json': { schema: ref(route.success.schema) } };
  const responses: Record<string, unknown> = { [String(route.success.status)]: success };
  for (const status of route.errors) responses[String(status)] = { $ref: `#/components/responses/E${status}` };

  const permission = route.permission
    ? `Needs the permission \`${route.permission}\` (or \`full_access\`).`
    : 'Needs no permission beyond a valid credential.';
  return {
    operationId: route.operationId,
    summary: route.summary,
    description: route.auth === 'institution' ? 'Institution operation: send the Institution header.' : permission,
    tags: [route.tag],
    security: [route.auth === 'institution' ? { institution: [] } : { bearer: [] }],
    ...(route.permission ? { 'x-required-permission': route.permission } : {}),
    ...(parameters.length ? { parameters } : {}),
    ...(route.requestBody ? { requestBody: { required: true, content: { 'application/json': { schema: ref(route.requestBody) } } } } : {}),
    responses,
  };
}

export function buildOpenApiDocument(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) (paths[route.path] ??= {})[route.method.toLowerCase()] = operation(route);
  const errorStatuses = [...new Set(routes.flatMap((r) => r.errors))].sort((a, b) => a - b);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Accounting & Invoicing Service API, as served by the acctops sandbox',
      version: '1.0.0-sandbox',
      description:
        "The operations of the service's API description (accounting-api.md, the service owners' document, not part of this repository) that the sandbox serves, with the choices of docs/assumptions.md " +
        'where the spec says "not shown" (error envelope, institution response bodies, API-key management paths). ' +
        'It describes the default dialect; the minimal dialect (startSandbox({ dialect: "minimal" })) answers in other shapes, ' +
        'listed in docs/assumptions.md, "The minimal dialect". ' +
        'Generated by `npm run openapi` from sandbox/routes.ts and sandbox/schemas.ts; do not edit by hand.',
    },
    servers: [{ url: 'http://127.0.0.1:4010/api/v1', description: 'npm run sandbox' }],
    tags: [
      { name: 'institution', description: 'User registration and the token lifecycle (Institution header).' },
      { name: 'companies', description: 'Companies and their tax reports.' },
      { name: 'accounting', description: 'Transactions and categories.' },
      { name: 'api-keys', description: 'API-key management (paths are an assumption; see docs/assumptions.md).' },
    ],
    paths,
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'An API key (`sbx_` and 32 base62 characters) or a user access token (JWT).',
        },
        institution: { type: 'apiKey', in: 'header', name: 'Institution', description: '`<institution_id>:<secret_key>`' },
      },
      parameters: {
        page: {
          name: 'page',
          in: 'query',
          required: false,
          description: 'Page number, from 1; a page past the last is 404.',
          schema: { type: 'integer', minimum: 1, default: 1 },
        },
        'X-Company-Id': {
          name: 'X-Company-Id',
          in: 'header',
          required: false,
          description: "Must equal an API key's company; selects the company of a user token with several companies.",
          schema: { type: 'string', format: 'uuid' },
        },
      },
      headers: {
        'X-Request-Id': {
          description: 'Present on every response; repeated as error.requestId.',
          schema: { type: 'string', pattern: '^req_[0-9a-f]+$' },
        },
        'Retry-After': { description: 'Whole seconds to wait, at least 1.', schema: { type: 'integer', minimum: 1 } },
      },
      responses: Object.fromEntries(
        errorStatuses.map((status) => [
          `E${status}`,
          {
            description: ERROR_DESCRIPTIONS[status] ?? 'An error.',
            headers: {
              'X-Request-Id': requestIdHeader,
              ...(status === 429 ? { 'Retry-After': { $ref: '#/components/headers/Retry-After' } } : {}),
            },
            content: { 'application/json': { schema: { $ref: `${REF}Error` } } },
          },
        ]),
      ),
      schemas: componentSchemas(),
    },
  };
}

export function renderOpenApiYaml(): string {
  const header = '# Generated by `npm run openapi` from sandbox/routes.ts and sandbox/schemas.ts. Do not edit by hand.\n';
  return header + stringify(buildOpenApiDocument(), { aliasDuplicateObjects: false, lineWidth: 0 });
}
