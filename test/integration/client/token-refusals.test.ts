import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileTokenStore } from '../../../src/adapters/local/file-token-store';
import { type CredentialProvider, createAccountingClient, institutionAuth } from '../../../src/core/accounting-api';
import { serviceReachableProbe } from '../../../src/core/health/probes';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { MemoryMetrics } from '../../../src/core/shared/metrics';
import { TokenLifecycle } from '../../../src/core/tokens/token-lifecycle';
import { TEST_DIALECTS } from '../../helpers/dialects';
import { MINUTE, SteppingClock, type World, startWorld } from './support';

/**
 * Issue 13, item 4, in both dialects: a refusal that concerns the user's token (after an expire:
 * the default dialect's 400 invalid_grant, the minimal dialect's 401 token_not_valid) is a dead
 * grant for that user alone. It does not read as "the institution credential is wrong": the
 * credential is not re-read, the other users of the batch are refreshed, the user is recovered
 * through retrieve, and the health probe (what pages on-call) stays green. A credential that is
 * really wrong still reads as one.
 */
describe.each(TEST_DIALECTS)('token refusals (%s dialect)', (dialect) => {
  let world: World;
  let dir: string;

  beforeAll(async () => {
    world = await startWorld({ dialect });
    dir = await mkdtemp(join(tmpdir(), 'acctops-token-refusals-'));
  });
  afterAll(async () => {
    await world.sandbox.stop();
    await rm(dir, { recursive: true, force: true });
  });

  function lifecycleWith(secretKey: string) {
    const base = institutionAuth({ institutionId: world.institutionId, secretKey });
    const reauth = jest.fn(async () => false);
    const credentials: CredentialProvider = { get: () => base.get(), onAuthenticationError: reauth };
    const client = createAccountingClient({
      baseUrl: world.sandbox.baseUrl,
      credentials,
      clock: new SteppingClock(world.clock),
      random: () => 0,
    });
    const metrics = new MemoryMetrics();
    const lifecycle = new TokenLifecycle({
      store: new FileTokenStore({ path: join(dir, 'tokens.json') }),
      institution: client.institution,
      clock: world.clock,
      logger: new MemoryLogger(),
      metrics,
    });
    return { lifecycle, client, reauth, metrics };
  }

  const newUser = () => {
    const externalId = randomUUID();
    return { externalId, username: `user-${externalId.slice(0, 8)}`, email: `${externalId.slice(0, 8)}@example.test` };
  };

  it('after an expire, the refused refresh is that user’s dead grant: recovered through retrieve, the batch goes on, the credential is not blamed', async () => {
    const { lifecycle, client, reauth } = lifecycleWith(world.institutionSecret);
    const users = [newUser(), newUser(), newUser()];
    for (const user of users) await expect(lifecycle.onboard(user)).resolves.toMatchObject({ result: 'created', status: 'active' });
    const store = new FileTokenStore({ path: join(dir, 'tokens.json') });
    const expired = (await store.get(users[0]!.externalId))!;
    // Someone (a runbook at the service, another integration) expired the user's tokens.
    await expect(client.institution.expireToken(expired.refreshToken)).resolves.toMatchObject({ expired: true });
    await expect(client.institution.verifyToken(expired.accessToken)).resolves.toMatchObject({ valid: false });

    world.clock.advance(16 * MINUTE);
    const outcomes = await lifecycle.refreshBatch(users.map((u) => u.externalId));
    expect(outcomes.map((o) => o.result)).toEqual(['recovered', 'refreshed', 'refreshed']);
    expect(reauth).not.toHaveBeenCalled();
    const recovered = (await store.get(users[0]!.externalId))!;
    expect(recovered).toMatchObject({ status: 'active' });
    expect(recovered.accessToken).not.toBe(expired.accessToken);
    await expect(lifecycle.verify(users[0]!.externalId)).resolves.toMatchObject({ service: { valid: true } });
  });

  it('the health probe verifies a token that is not one and stays green', async () => {
    const { client, reauth } = lifecycleWith(world.institutionSecret);
    await expect(serviceReachableProbe(client).check()).resolves.toBe('institution token verify answered');
    expect(reauth).not.toHaveBeenCalled();
  });

  it('a wrong institution credential is still read as one: every user deferred, nothing changed, the secret re-read', async () => {
    const good = lifecycleWith(world.institutionSecret);
    const user = newUser();
    await good.lifecycle.onboard(user);
    world.clock.advance(16 * MINUTE);
    const store = new FileTokenStore({ path: join(dir, 'tokens.json') });
    const before = (await store.get(user.externalId))!;

    const wrong = lifecycleWith(`${world.institutionSecret}x`);
    const [outcome] = await wrong.lifecycle.refreshBatch([user.externalId]);
    expect(outcome).toMatchObject({ result: 'failed', errorClass: 'AuthenticationError' });
    expect(wrong.reauth).toHaveBeenCalledTimes(1);
    expect(await store.get(user.externalId)).toMatchObject({
      status: 'active',
      version: before.version,
      refreshToken: before.refreshToken,
    });
    await expect(serviceReachableProbe(wrong.client).check()).rejects.toMatchObject({ name: 'AuthenticationError', status: 401 });
  });
});
