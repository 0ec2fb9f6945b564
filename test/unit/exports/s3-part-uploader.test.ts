import { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { S3ObjectStore } from '../../../src/adapters/aws/s3-object-store';
import { ObjectStoreError } from '../../../src/core/exports/formats/period-errors';

const MiB = 1024 * 1024;

interface Sent {
  name: string;
  input: Record<string, unknown>;
  /** For UploadPart: a copy of the body as it was when sent. */
  body?: Buffer;
  /** For UploadPart: the memory the body was sent from. */
  memory?: ArrayBufferLike;
}

/**
 * A stand-in S3 client that records each command. s3rver cannot check checksums, so the SDK's
 * default (`WHEN_SUPPORTED`) is covered here by what the store asks S3 for.
 */
function fakeClient(options: { checksums: 'WHEN_SUPPORTED' | 'WHEN_REQUIRED'; failPart?: number }): { client: S3Client; sent: Sent[] } {
  const sent: Sent[] = [];
  const client = {
    config: { requestChecksumCalculation: () => Promise.resolve(options.checksums) },
    send: (command: { constructor: { name: string }; input: Record<string, unknown> }) => {
      const name = command.constructor.name;
      const input = command.input;
      const body = name === 'UploadPartCommand' ? Buffer.from(input.Body as Uint8Array) : undefined;
      sent.push({ name, input, body, memory: body ? (input.Body as Uint8Array).buffer : undefined });
      switch (name) {
        case 'CreateMultipartUploadCommand':
          return Promise.resolve({ UploadId: 'upload-1' });
        case 'UploadPartCommand': {
          const part = input.PartNumber as number;
          if (part === options.failPart) return Promise.reject(new Error('part refused'));
          return Promise.resolve({
            ETag: `"etag-${part}"`,
            ChecksumCRC32: options.checksums === 'WHEN_SUPPORTED' ? `crc-${part}` : undefined,
          });
        }
        default:
          return Promise.resolve({});
      }
    },
  };
  return { client: client as unknown as S3Client, sent };
}

/** `size` bytes whose value encodes their position, in chunks that do not align with parts. */
function body(size: number): { data: Buffer; stream: Readable } {
  const data = Buffer.alloc(size);
  for (let i = 0; i < size; i += 4) data.writeUInt32LE(i >>> 2, i);
  const chunks: Buffer[] = [];
  for (let offset = 0; offset < size; offset += 700_001) chunks.push(data.subarray(offset, offset + 700_001));
  return { data, stream: Readable.from(chunks) };
}

describe('S3ObjectStore part uploads', () => {
  it('sends parts of exactly partSize from reused buffers, in order, and completes with their CRC32 when the SDK computes checksums', async () => {
    const { client, sent } = fakeClient({ checksums: 'WHEN_SUPPORTED' });
    const store = new S3ObjectStore({ client, bucket: 'b', prefix: 'p', partSize: 5 * MiB, queueSize: 1 });
    const { data, stream } = body(16 * MiB + 12);
    await store.putStream('k.csv', stream, { contentType: 'text/csv' });

    expect(sent.map((s) => s.name)).toEqual([
      'CreateMultipartUploadCommand',
      'UploadPartCommand',
      'UploadPartCommand',
      'UploadPartCommand',
      'UploadPartCommand',
      'CompleteMultipartUploadCommand',
    ]);
    expect(sent[0]!.input).toMatchObject({ Bucket: 'b', Key: 'p/k.csv', ContentType: 'text/csv', ChecksumAlgorithm: 'CRC32' });
    const parts = sent.filter((s) => s.name === 'UploadPartCommand');
    expect(parts.map((p) => p.input.ContentLength)).toEqual([5 * MiB, 5 * MiB, 5 * MiB, MiB + 12]);
    expect(Buffer.concat(parts.map((p) => p.body!)).equals(data)).toBe(true);
    // queueSize 1: two buffers, taking turns.
    expect(parts[2]!.memory).toBe(parts[0]!.memory);
    expect(parts[3]!.memory).toBe(parts[1]!.memory);
    expect(parts[1]!.memory).not.toBe(parts[0]!.memory);
    expect(sent[5]!.input).toMatchObject({
      UploadId: 'upload-1',
      MultipartUpload: { Parts: [1, 2, 3, 4].map((n) => ({ PartNumber: n, ETag: `"etag-${n}"`, ChecksumCRC32: `crc-${n}` })) },
    });
  });

  it('asks for no checksum algorithm when the client computes checksums only when required', async () => {
    const { client, sent } = fakeClient({ checksums: 'WHEN_REQUIRED' });
    const store = new S3ObjectStore({ client, bucket: 'b', partSize: 5 * MiB });
    await store.putStream('k', body(6 * MiB).stream);
    expect(sent[0]!.input.ChecksumAlgorithm).toBeUndefined();
  });

  it('sends a body smaller than one part as one PutObject', async () => {
    const { client, sent } = fakeClient({ checksums: 'WHEN_SUPPORTED' });
    const store = new S3ObjectStore({ client, bucket: 'b', partSize: 5 * MiB });
    const { data, stream } = body(MiB);
    await store.putStream('k', stream, { contentType: 'application/gzip' });
    expect(sent.map((s) => s.name)).toEqual(['PutObjectCommand']);
    expect(sent[0]!.input).toMatchObject({ Key: 'k', ContentLength: MiB, ContentType: 'application/gzip' });
    expect(Buffer.from(sent[0]!.input.Body as Uint8Array).equals(data)).toBe(true);
  });

  it('aborts the upload when a part fails, and completes nothing', async () => {
    const { client, sent } = fakeClient({ checksums: 'WHEN_SUPPORTED', failPart: 2 });
    const store = new S3ObjectStore({ client, bucket: 'b', partSize: 5 * MiB });
    const error = await store.putStream('k', body(21 * MiB).stream).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ObjectStoreError);
    const names = sent.map((s) => s.name);
    expect(names).toContain('AbortMultipartUploadCommand');
    expect(names).not.toContain('CompleteMultipartUploadCommand');
    expect(sent.find((s) => s.name === 'AbortMultipartUploadCommand')!.input).toMatchObject({ Key: 'k', UploadId: 'upload-1' });
  });
});
