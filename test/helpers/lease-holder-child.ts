import { randomUUID } from 'node:crypto';
import { leaseOwnerPrefix } from '../../cli/local/held-leases';
import { FileTokenStore } from '../../src/adapters/local/file-token-store';

/**
 * A process that takes a user's lease in a token file the way a local command does (its owner id
 * names this process: leaseOwnerPrefix), reports the owner id and then waits, to be killed or to
 * stay alive (test/unit/cli/held-leases.test.ts).
 */
interface Take {
  path: string;
  externalId: string;
  now: number;
  leaseUntil: number;
}

process.on('message', (message: Take) => {
  void (async () => {
    const owner = `${leaseOwnerPrefix()}:${randomUUID()}`;
    const record = await new FileTokenStore({ path: message.path }).acquireLease(
      message.externalId,
      owner,
      message.leaseUntil,
      message.now,
    );
    process.send!({ owner: record ? owner : null });
  })();
});
// Kept alive until the parent kills it.
setInterval(() => undefined, 60_000);
