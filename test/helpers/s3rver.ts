import { access, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
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
  /**
   * Resolves at the first request s3rver has answered (before this call or after) that `matches`:
   * a test waits for an upload's first stored part this way instead of sleeping. Only with
   * `multipartUploads` (the requests are seen by that shim).
   */
  answered(matches: (request: AnsweredRequest) => boolean): Promise<AnsweredRequest>;
  /** As `answered`, at a request's arrival (its status is 0): for a request that is held (`aborts: 'hold'`). */
  received(matches: (request: AnsweredRequest) => boolean): Promise<AnsweredRequest>;
  stop(): Promise<void>;
}

/** A request s3rver answered, as `answered` sees it. */
export interface AnsweredRequest {
  method: string;
  path: string;
  query: Record<string, string | string[] | undefined>;
  status: number;
}

export interface StartS3Options {
  /**
   * s3rver 3.7 answers ListMultipartUploads with NotImplemented and AbortMultipartUpload with
   * MethodNotAllowed, so an abort can never succeed there and what is left cannot be listed. This
   * adds both, over s3rver's own record of an upload (a directory per upload id holding its key),
   * and the `answered` log. Off by default: other suites keep s3rver as it is.
   */
  multipartUploads?: boolean;
  /**
   * With `multipartUploads`, what AbortMultipartUpload gets: `answer` (the default) aborts;
   * `refuse` leaves it to s3rver, which refuses it (an abort that fails); `hold` never answers
   * until stop() (a dead network).
   */
  aborts?: 'answer' | 'refuse' | 'hold';
}

/** Requests seen so far, and the waiters for one still to come. */
class RequestLog {
  private readonly seen: AnsweredRequest[] = [];
  private readonly waiting = new Set<{ matches: (r: AnsweredRequest) => boolean; resolve: (r: AnsweredRequest) => void }>();

  add(request: AnsweredRequest): void {
    this.seen.push(request);
    for (const w of [...this.waiting]) {
      if (w.matches(request)) {
        this.waiting.delete(w);
        w.resolve(request);
      }
    }
  }

  find(matches: (r: AnsweredRequest) => boolean): Promise<AnsweredRequest> {
    const seen = this.seen.find(matches);
    return seen ? Promise.resolve(seen) : new Promise((resolve) => this.waiting.add({ matches, resolve }));
  }
}

/** Starts s3rver on an ephemeral port with the given buckets, in a temporary directory. */
export async function startS3(buckets: string[] = ['acctops-exports'], options: StartS3Options = {}): Promise<LocalS3> {
  const directory = await mkdtemp(join(tmpdir(), 'acctops-s3rver-'));
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    configureBuckets: buckets.map((name) => ({ name })),
  });
  const answered = new RequestLog();
  const received = new RequestLog();
  const held = new Set<() => void>();
  const aborts = options.aborts ?? 'answer';
  if (options.multipartUploads) {
    // First in the chain (Koa composes it when run() listens), ahead of s3rver's router.
    server.middleware.unshift(async (ctx, next) => {
      const request = () => ({ method: ctx.method, path: ctx.path, query: { ...ctx.query }, status: ctx.status });
      received.add({ ...request(), status: 0 });
      if (aborts === 'hold' && ctx.method === 'DELETE' && typeof ctx.query.uploadId === 'string')
        await new Promise<void>((resolve) => held.add(resolve));
      if (!(await multipartShim(server, ctx, aborts !== 'refuse'))) await next();
      answered.add(request());
    });
  }
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
    answered: (matches) =>
      options.multipartUploads
        ? answered.find(matches)
        : Promise.reject(new Error('answered() needs startS3(…, { multipartUploads: true })')),
    received: (matches) =>
      options.multipartUploads
        ? received.find(matches)
        : Promise.reject(new Error('received() needs startS3(…, { multipartUploads: true })')),
    stop: async () => {
      for (const release of held) release();
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/** Answers ListMultipartUploads and AbortMultipartUpload (path style); false for any other request. */
async function multipartShim(server: S3rver, ctx: S3rver.Context, aborts: boolean): Promise<boolean> {
  const [bucket, ...rest] = ctx.path.split('/').filter(Boolean);
  if (!bucket) return false;
  const uploadsDir = server.store.getResourcePath(bucket, undefined, 'uploads');
  const xml = (body: string) => {
    ctx.type = 'application/xml';
    ctx.body = `<?xml version="1.0" encoding="UTF-8"?>\n${body}`;
  };
  if (ctx.method === 'GET' && rest.length === 0 && 'uploads' in ctx.query) {
    const uploads: { key: string; id: string }[] = [];
    for (const id of await readdir(uploadsDir).catch(() => [] as string[])) {
      // A part request cut off mid-body may make the directory again after an abort (s3rver's
      // mkdirp): an upload is the directory holding its key, as CreateMultipartUpload wrote it.
      const key = await readFile(join(uploadsDir, id, 'key'), 'utf8').catch(() => undefined);
      if (key !== undefined) uploads.push({ key, id });
    }
    ctx.status = 200;
    xml(
      `<ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>${escapeXml(bucket)}</Bucket>` +
        `<IsTruncated>false</IsTruncated>${uploads
          .map((u) => `<Upload><Key>${escapeXml(u.key)}</Key><UploadId>${escapeXml(u.id)}</UploadId></Upload>`)
          .join('')}</ListMultipartUploadsResult>`,
    );
    return true;
  }
  const uploadId = ctx.query.uploadId;
  if (aborts && ctx.method === 'DELETE' && rest.length > 0 && typeof uploadId === 'string') {
    const dir = join(uploadsDir, uploadId);
    if (
      !/^[\w-]+$/.test(uploadId) ||
      !(await access(join(dir, 'key')).then(
        () => true,
        () => false,
      ))
    ) {
      ctx.status = 404;
      xml('<Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>');
      return true;
    }
    await rm(dir, { recursive: true, force: true });
    ctx.status = 204;
    ctx.body = null;
    return true;
  }
  return false;
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
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
