// Minimal typings for the local AWS peers used by tests, bench and the demo. Neither package ships types.
declare module 's3rver' {
  interface S3rverOptions {
    address?: string;
    port?: number;
    silent?: boolean;
    directory: string;
    resetOnClose?: boolean;
    allowMismatchedSignatures?: boolean;
    vhostBuckets?: boolean;
    configureBuckets?: { name: string; configs?: (string | Buffer)[] }[];
  }
  class S3rver {
    constructor(options: S3rverOptions);
    run(): Promise<{ address: string; port: number }>;
    close(): Promise<void>;
    /** Koa's middleware array (S3rver extends Koa), composed when run() starts listening. */
    middleware: ((ctx: S3rver.Context, next: () => Promise<void>) => Promise<void>)[];
    /** Its FilesystemStore: where a bucket's resources (objects, multipart uploads) live on disk. */
    store: { getResourcePath(bucket: string, key: string | undefined, resource: string): string };
  }
  namespace S3rver {
    /** The part of Koa's context test/helpers/s3rver.ts uses. */
    interface Context {
      method: string;
      path: string;
      query: Record<string, string | string[] | undefined>;
      status: number;
      body: unknown;
      type: string;
    }
  }
  export = S3rver;
}

declare module 'dynalite' {
  import type { Server } from 'node:http';
  interface DynaliteOptions {
    path?: string;
    createTableMs?: number;
    deleteTableMs?: number;
    updateTableMs?: number;
    maxItemSizeKb?: number;
  }
  function dynalite(options?: DynaliteOptions): Server;
  export = dynalite;
}
