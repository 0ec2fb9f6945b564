import { AuthenticationError, type Credential } from '../../../src/core/accounting-api';
import { userTokenCredentials } from '../../../src/core/exports/pipeline/user-token-credentials';
import { ManualClock } from '../../../src/core/shared/clock';
import type { TokenStore } from '../../../src/core/tokens/token-store';

const HOUR = 3_600_000;
const T1 = 'access-token-one-0123456789abcdef';
const T2 = 'access-token-two-0123456789abcdef';

/** A token store holding one user, whose access token a test swaps as the refresh worker would. */
function storeHolding(initial: string) {
  const state = { token: initial, reads: 0 };
  const store: Pick<TokenStore, 'get'> = {
    get: () => {
      state.reads += 1;
      return Promise.resolve({ accessToken: state.token, accessTokenExpiresAt: Date.UTC(2026, 10, 26) + HOUR, status: 'active' } as Awaited<
        ReturnType<TokenStore['get']>
      >);
    },
  };
  return { store, state };
}

const refusal = () => new AuthenticationError('token_expired', { status: 401 });
const sentWith = (accessToken: string): Credential => ({ kind: 'accessToken', accessToken });

describe('userTokenCredentials: after a 401', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 26));

  it('retries every request the refused token had in flight with the renewed one, after one re-read of the store', async () => {
    const { store, state } = storeHolding(T1);
    const provider = userTokenCredentials(store, 'ext-1', { clock });
    expect(await provider.get()).toMatchObject({ accessToken: T1 });
    state.token = T2;
    // A list's page and the request ahead of it, refused together.
    const answers = await Promise.all([
      provider.onAuthenticationError!(refusal(), sentWith(T1)),
      provider.onAuthenticationError!(refusal(), sentWith(T1)),
    ]);
    expect(answers).toEqual([true, true]);
    expect(state.reads).toBe(2);
    expect(await provider.get()).toMatchObject({ accessToken: T2 });
    // A request that went out with T1 and is refused after the re-read: retried with T2, no read.
    expect(await provider.onAuthenticationError!(refusal(), sentWith(T1))).toBe(true);
    expect(state.reads).toBe(2);
  });

  it('gives up when the store holds no other token, and gives the same answer to a later 401 with that token', async () => {
    const { store, state } = storeHolding(T1);
    const provider = userTokenCredentials(store, 'ext-1', { clock });
    await provider.get();
    const answers = await Promise.all([
      provider.onAuthenticationError!(refusal(), sentWith(T1)),
      provider.onAuthenticationError!(refusal(), sentWith(T1)),
    ]);
    expect(answers).toEqual([false, false]);
    expect(await provider.onAuthenticationError!(refusal(), sentWith(T1))).toBe(false);
    expect(state.reads).toBe(2);
  });
});
