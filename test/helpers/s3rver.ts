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

/** One command `instrumentS3` saw `client` send. */
export interface S3Call {
  command: string;
  input: Record<string, unknown>;
  /** The object key, `''` for a command without one. */
  key: string;
  /** How many times the client has sent this command, this one included. */
  count: number;
  /** UploadPart only: which part of its key this is (1, 2, …). */
  part?: number;
}

/**
 * Counts what `client` sends (each command, and the parts uploaded per key) and fails the calls
 * `fail` picks before they leave: S3 going wrong mid-upload.
 */
export function instrumentS3(
  client: S3Client,
  fail: (call: S3Call) => boolean = () => false,
): { commands: Map<string, number>; parts: Map<string, number> } {
  const commands = new Map<string, number>();
  const parts = new Map<string, number>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = context.commandName ?? '';
      const input = args.input as Record<string, unknown>;
      const key = typeof input.Key === 'string' ? input.Key : '';
      const count = (commands.get(command) ?? 0) + 1;
      commands.set(command, count);
      let part: number | undefined;
      if (command === 'UploadPartCommand') {
        part = (parts.get(key) ?? 0) + 1;
        parts.set(key, part);
      }
      if (fail({ command, input, key, count, part }))
        throw new Error(`injected ${command} failure${part === undefined ? '' : ` (part ${part} of ${key})`}`);
      return next(args);
    },
    { step: 'initialize', name: 'acctopsS3Instrument' },
  );
  return { commands, parts };
}
