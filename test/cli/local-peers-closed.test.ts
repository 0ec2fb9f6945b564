import { GetSecretValueCommand, ListSecretsCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withLocalWorld } from '../../cli/local/local-world';
import { startSandbox } from '../../sandbox';
import { ManualClock } from '../../src/core/shared/clock';
import { silentLogger } from '../../src/core/shared/logger';
import { localClientConfig } from '../helpers/aws-credentials';
import { cliEnv } from '../helpers/cli';

/**
 * While a local command runs, its sandbox and Secrets Manager emulator listen on loopback, where
 * every account of the host can connect. The state files are 0600, so the peers must not serve
 * what the files protect: the emulator answers only the access key id this process chose at random,
 * and the sandbox has no admin API over HTTP (the command drives it in process). A security review
 * read the institution credential from a running export's emulator with an unsigned request.
 */
describe('acctops local mode: the peers a command starts serve no one else on the host', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'acctops-peers-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('the emulator refuses another key id as AWS refuses an unknown key; the world itself reads its secrets', async () => {
    await withLocalWorld({ stateDir: join(dir, 'state'), logger: silentLogger, env: cliEnv() }, async (world) => {
      const stranger = new SecretsManagerClient(localClientConfig(world.sm.endpoint));
      try {
        const refusal = await stranger
          .send(new GetSecretValueCommand({ SecretId: world.state.institutionSecret }))
          .catch((e: unknown) => e as Error & { $metadata?: { httpStatusCode?: number } });
        expect(refusal).toBeInstanceOf(Error);
        expect((refusal as Error).name).toBe('UnrecognizedClientException');
        expect((refusal as { $metadata: { httpStatusCode: number } }).$metadata.httpStatusCode).toBe(400);
        const listed = await stranger.send(new ListSecretsCommand({})).catch((e: unknown) => e as Error);
        expect((listed as Error).name).toBe('UnrecognizedClientException');
      } finally {
        stranger.destroy();
      }
      // The same secret through the world's own client: the refusal above is the key id, not the name.
      const credential = await world.readInstitutionCredential();
      expect(credential.institutionId.length).toBeGreaterThan(0);
    });
  });

  it("the sandbox's admin paths are unknown routes, while its API answers", async () => {
    await withLocalWorld({ stateDir: join(dir, 'state'), logger: silentLogger, env: cliEnv() }, async (world) => {
      const admin = await fetch(`${world.sandbox.adminUrl}demoCredentials`);
      expect(admin.status).toBe(404);
      const body = await admin.text();
      expect(body).not.toContain(world.sandbox.demo!.institution.header);
      // The API itself is up: a request without a key is refused as unauthenticated, not unknown.
      const api = await fetch(`${world.sandbox.baseUrl}/companies/`);
      expect(api.status).toBe(401);
    });
  });

  it("the sandbox's API refuses the credentials anyone can compute from the seed, and answers the state's own", async () => {
    // What another account of the host can do: start a sandbox of the local mode's seed with the
    // credentials that seed gives (as `acctops sandbox --show-credentials` printed them before).
    const computed = await startSandbox({
      port: 0,
      seed: 1,
      clock: new ManualClock(Date.now()),
      seededCredentials: true,
      adminHttp: false,
    });
    try {
      await withLocalWorld({ stateDir: join(dir, 'state'), logger: silentLogger, env: cliEnv() }, async (world) => {
        const own = world.sandbox.demo!;
        // The same companies: the data is the seed's.
        expect(own.companies.map((c) => c.publicId)).toEqual(computed.demo!.companies.map((c) => c.publicId));
        for (const company of computed.demo!.companies) {
          for (const { key } of company.apiKeys) {
            const refused = await fetch(`${world.sandbox.baseUrl}/accounting/transactions/`, {
              headers: { authorization: `Bearer ${key}` },
            });
            expect(refused.status).toBe(401);
          }
        }
        const bob = computed.demo!.users[1]!;
        const retrieve = (institution: string) =>
          fetch(`${world.sandbox.baseUrl}/institution/users/token/retrieve/`, {
            method: 'POST',
            headers: { institution, 'content-type': 'application/json' },
            body: JSON.stringify({ username: bob.username, email: bob.email, external_id: bob.externalId }),
          });
        expect((await retrieve(computed.demo!.institution.header)).status).toBe(401);
        // The refusals are the credentials, not the requests: the state's own are served.
        expect((await retrieve(own.institution.header)).status).toBe(200);
        const served = await fetch(`${world.sandbox.baseUrl}/accounting/transactions/`, {
          headers: { authorization: `Bearer ${own.companies[0]!.apiKeys[0]!.key}` },
        });
        expect(served.status).toBe(200);
      });
    } finally {
      await computed.stop();
    }
  });
});
