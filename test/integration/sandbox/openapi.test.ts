import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import type { z } from 'zod';
import { ManualClock } from '../../../src/core/shared/clock';
import { startSandbox, type RunningSandbox } from '../../../sandbox';
import { renderOpenApiYaml } from '../../../sandbox/openapi';
import { routeKey, routes } from '../../../sandbox/routes';
import { errorEnvelopeSchema, verifyResponseSchema } from '../../../sandbox/schemas';
import { call, type CallResult } from './support';

const COMMITTED = join(__dirname, '..', '..', '..', 'docs', 'openapi.yaml');

describe('docs/openapi.yaml', () => {
  it('is what `npm run openapi` generates from the sandbox (run it after changing routes or schemas)', () => {
    expect(readFileSync(COMMITTED, 'utf8')).toBe(renderOpenApiYaml());
  });

  it('is OpenAPI 3.1 with every route and every $ref resolvable', () => {
    const doc = parse(readFileSync(COMMITTED, 'utf8')) as { openapi: string; paths: Record<string, Record<string, unknown>> };
    expect(doc.openapi).toBe('3.1.0');
    for (const route of routes) expect(doc.paths[route.path]?.[route.method.toLowerCase()]).toBeDefined();
    const refs = [...readFileSync(COMMITTED, 'utf8').matchAll(/\$ref: "#\/([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(20);
    for (const ref of new Set(refs)) {
      const target = ref.split('/').reduce<unknown>((node, part) => (node as Record<string, unknown> | undefined)?.[part], doc);
      expect([ref, target]).toEqual([ref, expect.anything()]);
    }
  });
});

describe('sandbox responses match the schemas the document is generated from', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 20, 9, 0, 0));
  let sandbox: RunningSandbox;
  const successes = new Map<string, CallResult>();
  const failures: CallResult[] = [];

  beforeAll(async () => {
    sandbox = await startSandbox({ port: 0, clock, amountEncoding: 'mixed', displayLabels: true });
    const demo = sandbox.demo!;
    const company = demo.companies[0]!;
    const key = company.apiKeys[0]!.key;
    const institution = demo.institution.header;
    const record = (route: string, res: CallResult) => (res.status < 300 ? successes.set(route, res) : failures.push(res));

    const identity = { username: 'schema-user', email: 'schema@example.com', external_id: randomUUID() };
    const created = await call(sandbox.baseUrl, '/institution/users/create/', { institution, body: identity });
    record('POST /institution/users/create/', created);
    const refreshed = await call(sandbox.baseUrl, '/institution/users/token/refresh/', {
      institution,
      body: { refresh: created.body.refreshToken },
    });
    record('POST /institution/users/token/refresh/', refreshed);
    record(
      'POST /institution/users/token/verify/',
      await call(sandbox.baseUrl, '/institution/users/token/verify/', { institution, body: { token: refreshed.body.accessToken } }),
    );
    const retrieved = await call(sandbox.baseUrl, '/institution/users/token/retrieve/', { institution, body: identity });
    record('POST /institution/users/token/retrieve/', retrieved);
    record(
      'POST /institution/users/token/expire/',
      await call(sandbox.baseUrl, '/institution/users/token/expire/', { institution, body: { refresh: retrieved.body.refreshToken } }),
    );
    const invalid = await call(sandbox.baseUrl, '/institution/users/token/verify/', { institution, body: { token: 'x.y.z' } });
    expect(verifyResponseSchema.parse(invalid.body)).toEqual({ valid: false, reason: 'invalid' });

    record('GET /companies/', await call(sandbox.baseUrl, '/companies/', { bearer: key }));
    record(
      'GET /companies/{company_pk}/taxes/reports/',
      await call(sandbox.baseUrl, `/companies/${company.publicId}/taxes/reports/`, { bearer: key }),
    );
    record('GET /accounting/transactions/', await call(sandbox.baseUrl, '/accounting/transactions/?page_size=1000', { bearer: key }));
    record('GET /accounting/categories/', await call(sandbox.baseUrl, '/accounting/categories/', { bearer: key }));
    record('GET /api-keys/', await call(sandbox.baseUrl, '/api-keys/', { bearer: key }));
    const minted = await call(sandbox.baseUrl, '/api-keys/', { bearer: key, body: { name: 'schema', permissions: ['read_transactions'] } });
    record('POST /api-keys/', minted);
    record(
      'DELETE /api-keys/{publicId}/',
      await call(sandbox.baseUrl, `/api-keys/${minted.body.publicId}/`, { method: 'DELETE', bearer: key }),
    );

    // One of each documented error status.
    failures.push(await call(sandbox.baseUrl, '/institution/users/create/', { institution, body: identity })); // 409
    failures.push(await call(sandbox.baseUrl, '/accounting/transactions/?page=0', { bearer: key })); // 400
    failures.push(await call(sandbox.baseUrl, '/companies/')); // 401
    failures.push(await call(sandbox.baseUrl, '/api-keys/', { bearer: company.apiKeys[1]!.key })); // 403
    failures.push(await call(sandbox.baseUrl, '/accounting/transactions/?page=99', { bearer: key })); // 404
    for (const status of [429, 500, 502, 503]) {
      await sandbox.admin.faults.add({ route: 'GET /companies/', fault: { type: 'status', status } });
      failures.push(await call(sandbox.baseUrl, '/companies/', { bearer: key }));
    }
  });
  afterAll(() => sandbox.stop());

  it.each(routes.map((r) => [routeKey(r), r] as const))('%s', (key, route) => {
    const res = successes.get(key);
    expect(res?.status).toBe(route.success.status);
    if (route.success.schema) {
      const parsed = (route.success.schema as z.ZodType).safeParse(res!.body);
      expect(parsed.success ? [] : parsed.error.issues).toEqual([]);
    } else {
      expect(res!.text).toBe('');
    }
  });

  it('every error is the documented envelope with the response X-Request-Id', () => {
    expect(failures.map((f) => f.status).sort()).toEqual([400, 401, 403, 404, 409, 429, 500, 502, 503]);
    for (const failure of failures) {
      const parsed = errorEnvelopeSchema.safeParse(failure.body);
      expect(parsed.success ? [] : parsed.error.issues).toEqual([]);
      expect(failure.body.error.requestId).toBe(failure.headers.get('x-request-id'));
    }
  });
});
