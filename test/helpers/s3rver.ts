import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import { S3Client } from '@aws-sdk/client-s3';
import { localClientConfig } from './aws-credentials';

export interface LocalS3 {
  endpoint: string;
  /** A client configured the way s3rver needs it (path style, checksums only when required). */
  client(): S3Client;
  stop(): Promise<void>;
}

/** Starts s3rver on an ephemeral port with the given buckets, in a temporary directory. */
export async function startS3(buckets: string[] = ['acctops-exports']): Promise<LocalS3> {
  const directory = await mkdtemp(join(tmpdir(), 'acctops-s3rver-'));
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: buckets.map((name) => ({ name })),
  });
  const info = (await server.run()) as AddressInfo;
  const endpoint = `http://127.0.0.1:${info.port}`;
  return {
    endpoint,
    client: () =>
      new S3Client({
        ...localClientConfig(endpoint),
        // s3rver only knows its built-in key pair.
        credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
        forcePathStyle: true,
        // Without these the SDK streams aws-chunked bodies, which s3rver stores verbatim (toolchain notes).
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
      }),
    stop: async () => {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
