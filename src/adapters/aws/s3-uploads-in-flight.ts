/**
 * The S3 stores of this process with a multipart upload under way, so that a signal handler can
 * abort those uploads before the process exits (the CLI's Ctrl-C and SIGTERM step in
 * cli/commands/export.ts). An upload left behind is invisible but billed until the bucket's
 * lifecycle rule removes it, and a bucket behind `--out s3://…` may have no such rule.
 *
 * Apart from s3-object-store.ts and without an @aws-sdk import on purpose: the CLI imports this
 * where every command loads, and the S3 client must load only for the commands that use it
 * (docs/cli-operations.md, "Loading on first use").
 */

/** What abandoning the uploads in flight did. A stream that had not begun a multipart upload counts in neither. */
export interface AbandonedUploads {
  /** Multipart uploads S3 confirmed gone (AbortMultipartUpload answered, or the upload no longer existed). */
  aborted: number;
  /** Multipart uploads whose abort failed or had no answer by the deadline: left to the bucket's lifecycle rule. */
  failed: number;
}

export interface AbandonsUploads {
  abandonUploads(deadlineMs?: number): Promise<AbandonedUploads>;
}

/**
 * How long abandoning may take: an AbortMultipartUpload round trip, with room for a slow link. A
 * dead network must not hold an exiting process, and the CLI's steps as a whole have 10 s
 * (cli/interrupt.ts), of which the local world still needs some to save.
 */
export const ABANDON_DEADLINE_MS = 4_000;

const uploading = new Set<AbandonsUploads>();
let exiting = false;

/** A store began its first upload in flight, or ended its last one. */
export function trackUploads(store: AbandonsUploads, active: boolean): void {
  if (active) uploading.add(store);
  else uploading.delete(store);
}

/**
 * Whether abandonS3Uploads has run: the process is exiting, and no store may begin an upload,
 * which would be left incomplete by the exit (a store idle at the signal is not among those abandoned).
 */
export function uploadsClosed(): boolean {
  return exiting;
}

/**
 * Abandons every upload in flight of this process's S3 stores (S3ObjectStore.abandonUploads) and
 * refuses new ones; resolves within the deadline, however the network behaves.
 */
export async function abandonS3Uploads(deadlineMs = ABANDON_DEADLINE_MS): Promise<AbandonedUploads> {
  exiting = true;
  const results = await Promise.all([...uploading].map((store) => store.abandonUploads(deadlineMs)));
  return results.reduce((sum, r) => ({ aborted: sum.aborted + r.aborted, failed: sum.failed + r.failed }), { aborted: 0, failed: 0 });
}
