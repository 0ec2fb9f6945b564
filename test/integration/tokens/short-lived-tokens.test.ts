import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileTokenStore } from '../../../src/adapters/local/file-token-store';
import { createAccountingClient, institutionAuth } from '../../../src/core/accounting-api';
import { MemoryLogger } from '../../../src/core/shared/logger';
import { MemoryMetrics } from '../../../src/core/shared/metrics';
import { TokenLifecycle } from '../../../src/core/tokens/token-lifecycle';
import type { Fault } from '../../../sandbox';
import { TEST_DIALECTS } from '../../helpers/dialects';
import { MINUTE, SteppingClock, type World, startWorld } from '../client/support';

/**
 * A service whose access tokens live 10 minutes, not the spec's usual 30, and that says so in a
 * field of the reply rather than in `expiresIn` or a JWT (the minimal dialect's tokens are opaque
 * and it sends no `expiresIn`). The stored expiry must be the service's, or the stored token is
 * dead for 20 minutes of every 30.
 */
describe.each(TEST_DIALECTS)('short-lived tokens stated by the reply (%s dialect)', (dialect) => {
  const TTL_MS = 10 * MINUTE;
  let world: World;
  let dir: string;

  beforeAll(async () => {
    world = await startWorld({ dialect, accessTokenTtlSeconds: TTL_MS / 1000 });
    dir = await mkdtemp(join(tmpdir(), 'acctops-short-lived-'));
  });
  afterEach(() => world.sandbox.admin.faults.clear());
  afterAll(async () => {
    await world.sandbox.stop();
    await rm(dir, { recursive: true, force: true });
  });

  function lifecycle(file: string, settings?: { accessTokenLifetimeMs?: number }) {
    const client = createAccountingClient({
      baseUrl: world.sandbox.baseUrl,
      credentials: institutionAuth({ institutionId: world.institutionId, secretKey: world.institutionSecret }),
      clock: new SteppingClock(world.clock),
      random: () => 0,
    });
    const store = new FileTokenStore({ path: join(dir, file) });
    const tokens = new TokenLifecycle({
      store,
      institution: client.institution,
      clock: world.clock,
      logger: new MemoryLogger(),
      metrics: new MemoryMetrics(),
      settings,
    });
    return { tokens, store };
  }

  const newUser = () => {
    const externalId = randomUUID();
    return { externalId, username: `short-${externalId.slice(0, 8)}`, email: `${externalId.slice(0, 8)}@example.test` };
  };

  const onAll = (fault: Fault) =>
    Promise.all(
      ['POST /institution/users/create/', 'POST /institution/users/token/retrieve/', 'POST /institution/users/token/refresh/'].map(
        (route) => world.sandbox.admin.faults.add({ route, times: 'always', fault }),
      ),
    );

  /** Within the second the sandbox's issue time is rounded to. */
  const aboutTtlFromNow = (expiresAt: number) => {
    expect(expiresAt).toBeGreaterThan(world.clock.now() + TTL_MS - 1000);
    expect(expiresAt).toBeLessThanOrEqual(world.clock.now() + TTL_MS);
  };

  it.each(['accessTokenExpiresAt', 'expires_at', 'accessTokenExpiresIn'] as const)(
    'stores the expiry the reply states as %s, on onboarding and on refresh',
    async (field) => {
      await onAll({ type: 'expiry_field', field });
      const { tokens, store } = lifecycle(`${field}.json`);
      const user = newUser();
      const onboarded = await tokens.onboard(user);
      aboutTtlFromNow(onboarded.accessTokenExpiresAt);

      world.clock.advance(TTL_MS - MINUTE);
      await expect(tokens.refresh(user.externalId)).resolves.toMatchObject({ result: 'refreshed' });
      aboutTtlFromNow((await store.get(user.externalId))!.accessTokenExpiresAt);
    },
  );

  it('reads the expiry inside nested tokens too', async () => {
    await onAll({ type: 'expiry_field', field: 'expiresAt' });
    await onAll({ type: 'nest_tokens', key: 'tokens' });
    const { tokens } = lifecycle('nested.json');
    aboutTtlFromNow((await tokens.onboard(newUser())).accessTokenExpiresAt);
  });

  it('without any statement, an opaque token gets the configured fallback lifetime', async () => {
    const { tokens } = lifecycle('fallback.json', { accessTokenLifetimeMs: 5 * MINUTE });
    const { accessTokenExpiresAt } = await tokens.onboard(newUser());
    // The default dialect's JWT says 10 minutes itself; the minimal dialect says nothing.
    if (dialect === 'default') aboutTtlFromNow(accessTokenExpiresAt);
    else expect(accessTokenExpiresAt).toBe(world.clock.now() + 5 * MINUTE);
  });
});
