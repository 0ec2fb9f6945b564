import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { LOCAL_REGION, localClientConfig } from './aws-credentials';

/**
 * moto's S3 (`moto_server`, Python): an S3 written by others than s3rver's authors and ours, with
 * ListMultipartUploads and AbortMultipartUpload of its own (s3rver lacks both; test/helpers/s3rver.ts
 * adds them) and the SDK's flexible checksums understood, so the client keeps its defaults, as in
 * a Lambda function. A fresh machine may not have it: `motoServer()` says whether this one does.
 */
export function motoServer(): string | undefined {
  const probe = spawnSync('moto_server', ['--help'], { encoding: 'utf8' });
  const found = probe.status === 0 ? 'moto_server' : undefined;
  if (found === undefined && process.env.ACCTOPS_REQUIRE_MOTO === '1') {
    throw new Error('ACCTOPS_REQUIRE_MOTO=1 but moto_server is not on the PATH');
  }
  return found;
}

export interface MotoS3 {
  endpoint: string;
  /** The client as the export function builds it (path style for an endpoint; checksums as the SDK defaults). */
  client(): S3Client;
  stop(): Promise<void>;
}

/** Starts moto_server on a free loopback port (it prints the one it got) with `buckets` created. */
export async function startMoto(buckets: string[]): Promise<MotoS3> {
  const child = spawn('moto_server', ['-H', '127.0.0.1', '-p', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const endpoint = await listening(child);
  const moto: MotoS3 = {
    endpoint,
    client: () => new S3Client({ ...localClientConfig(endpoint), forcePathStyle: true }),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
    },
  };
  try {
    const client = moto.client();
    for (const Bucket of buckets) {
      await client.send(new CreateBucketCommand({ Bucket, CreateBucketConfiguration: { LocationConstraint: LOCAL_REGION } }));
    }
    client.destroy();
  } catch (error) {
    await moto.stop();
    throw error;
  }
  return moto;
}

function listening(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => fail(new Error(`moto_server did not start within 30 s: ${text.slice(-500)}`)), 30_000);
    const fail = (error: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    };
    const read = (chunk: Buffer) => {
      // Werkzeug's banner; later output (one line a request) is read and dropped.
      if (text.length < 10_000) text += chunk.toString();
      const match = /Running on (http:\/\/127\.0\.0\.1:\d+)/.exec(text);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.once('error', fail);
    child.once('exit', (code) => fail(new Error(`moto_server exited (${code}) before listening: ${text.slice(-500)}`)));
  });
}
