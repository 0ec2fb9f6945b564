/**
 * Static credentials for the local peers. They are not secrets: the peers accept any signature.
 * Setting them explicitly keeps the SDK from walking the default chain (and the network).
 */
export const LOCAL_REGION = 'eu-central-1';
export const localCredentials = { accessKeyId: 'AKIALOCALPEER000000', secretAccessKey: 'local-peer-not-a-secret' };

export function localClientConfig(endpoint: string) {
  return { endpoint, region: LOCAL_REGION, credentials: localCredentials, maxAttempts: 1 };
}
