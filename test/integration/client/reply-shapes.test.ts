import { randomUUID } from 'node:crypto';
import { ResponseValidationError, jwtExpiry } from '../../../src/core/accounting-api';
import { redactString } from '../../../src/core/shared/redact';
import { TEST_DIALECTS } from '../../helpers/dialects';
import { type World, rejectionOf, startWorld } from './support';

/**
 * Reply shapes a service written from the spec alone may choose where the spec says "not shown"
 * (§4.1 token bodies, §4.2 "the company the key belongs to"), driven through sandbox faults in
 * both dialects: the tokens one level down, the company wrapped in a property.
 */
describe.each(TEST_DIALECTS)('reply shapes the spec leaves open (%s dialect)', (dialect) => {
  let world: World;

  beforeAll(async () => {
    world = await startWorld({ dialect });
  });
  afterEach(() => world.sandbox.admin.faults.clear());
  afterAll(() => world.sandbox.stop());

  const newUser = () => {
    const id = randomUUID();
    return { externalId: id, username: `shape-${id.slice(0, 8)}`, email: `shape-${id.slice(0, 8)}@example.test` };
  };

  it('reads tokens nested under "tokens" on create, retrieve and refresh, and keeps them secret', async () => {
    for (const route of [
      'POST /institution/users/create/',
      'POST /institution/users/token/retrieve/',
      'POST /institution/users/token/refresh/',
    ])
      await world.sandbox.admin.faults.add({ route, times: 1, fault: { type: 'nest_tokens' } });
    const institution = world.institutionClient().institution;
    const user = newUser();
    const created = await institution.createUser(user);
    expect(created.accessToken).toEqual(expect.any(String));
    const pair = await institution.retrieveToken(user);
    expect(pair.refreshToken).toEqual(expect.any(String));
    const refreshed = await institution.refreshToken(pair.refreshToken);
    expect(refreshed.accessToken).not.toBe(pair.accessToken);
    expect(await institution.verifyToken(refreshed.accessToken)).toMatchObject({ valid: true });
    for (const token of [created.accessToken, pair.accessToken, pair.refreshToken, refreshed.accessToken])
      expect(redactString(`token ${token}`)).not.toContain(token);
  });

  it('verify fills expiresAt from the JWT’s own exp when the body states none', async () => {
    const institution = world.institutionClient().institution;
    const user = newUser();
    await institution.createUser(user);
    const pair = await institution.retrieveToken(user);
    await world.sandbox.admin.faults.add({
      route: 'POST /institution/users/token/verify/',
      times: 1,
      fault: { type: 'drop_field', field: 'expiresAt' },
    });
    const verdict = await institution.verifyToken(pair.accessToken);
    const exp = jwtExpiry(pair.accessToken);
    // The default dialect's tokens are JWTs; the minimal dialect's are opaque and its verify body is `{}`.
    expect(verdict).toMatchObject({ valid: true, expiresAt: dialect === 'default' ? new Date(exp!).toISOString() : null });
  });

  it('reads the company wrapped in {"company": …}, and names the real path when it does not fit', async () => {
    await world.sandbox.admin.faults.add({ route: 'GET /companies/', times: 1, fault: { type: 'wrap_object', key: 'company' } });
    const companies = await world.client().companies.list().all();
    expect(companies.map((c) => c.parsed.publicId)).toEqual([world.companyId]);

    await world.sandbox.admin.faults.add({ route: 'GET /companies/', times: 1, fault: { type: 'drop_field', field: 'publicId' } });
    await world.sandbox.admin.faults.add({ route: 'GET /companies/', times: 1, fault: { type: 'wrap_object', key: 'company' } });
    const error = await rejectionOf(world.client().companies.list().all());
    expect(error).toBeInstanceOf(ResponseValidationError);
    expect((error as ResponseValidationError).field).toBe('company.publicId');
  });
});
