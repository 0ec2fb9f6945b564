import type { AccountingClient } from '../../../src/core/accounting-api';
import { PROBES } from '../../../src/core/health/check-health';
import { institutionCredentialProbe, PROBE_TOKEN, serviceReachableProbe } from '../../../src/core/health/probes';

describe('health probes', () => {
  it('institution credential: names the institution, never the secret key', async () => {
    const probe = institutionCredentialProbe({ get: async () => ({ institutionId: 'inst_7', secretKey: 'sk-not-to-be-shown' }) });
    expect(probe.name).toBe(PROBES.institutionCredential);
    await expect(probe.check()).resolves.toBe('institution inst_7');
  });

  it('service: verifies a non-token, so nothing changes at the service', async () => {
    const verified: string[] = [];
    const client = {
      institution: { verifyToken: async (token: string) => (verified.push(token), { valid: false as const, reason: 'invalid' }) },
    } as unknown as Pick<AccountingClient, 'institution'>;
    const probe = serviceReachableProbe(client);
    expect(probe.name).toBe(PROBES.service);
    await expect(probe.check()).resolves.toEqual(expect.any(String));
    expect(verified).toEqual([PROBE_TOKEN]);
  });

  it('service: the client’s error is the probe’s failure', async () => {
    const refused = new Error('authentication failed (401)');
    const client = { institution: { verifyToken: () => Promise.reject(refused) } } as unknown as Pick<AccountingClient, 'institution'>;
    await expect(serviceReachableProbe(client).check()).rejects.toBe(refused);
  });
});
