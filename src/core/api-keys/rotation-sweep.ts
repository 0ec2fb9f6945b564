import * as z from 'zod';
import { SecretAccessDeniedError, type SecretDescription, SecretNotFoundError, SecretStage } from '../ports/secrets';
import type { CompanyStanding } from '../companies/company-removal';
import { parseJsonWith } from '../shared/errors';
import type { CompanyKeyDirectory, CompanyKeyEntry } from './key-directory';
import {
  type DoctorDeps,
  type DoctorReport,
  type DoctorSettings,
  describeDoctorError,
  examineCompanies,
  type Finding,
  givenUpAt,
  reportDoctorRun,
} from './rotation-doctor';
import { lazySchema } from '../shared/lazy-schema';

/**
 * The rotation doctor at fleet scale (issue 15; docs/fleet-rotation.md). The full check
 * (`examineCompanies`: version listing, every version's value, the company's keys at the service)
 * costs a dozen calls per company; run hourly over 100,000 companies it would need more than
 * Lambda's 15 minutes. The sweep examines only companies whose rotation is due, overdue or in
 * progress, and chooses them without reading a single secret value:
 *
 * 1. the registry, a page at a time: companies whose `rotationCheckAfter` is absent or past (a
 *    small projection: id, removedAt, rotationCheckAfter);
 * 2. DescribeSecret of each of those (metadata only: rotation rules, NextRotationDate,
 *    LastRotatedDate, version stages) decides: AWSPENDING on a non-current version, or a version
 *    the doctor gave up and has not released yet (`givenUpLabel`) = in progress, NextRotationDate past = due (overdue past `overdueAfterMs`), rotation off = disabled; anything
 *    else is not due, and its `rotationCheckAfter` is set to its next rotation (capped at
 *    `maxRecheckMs`) so that the next runs skip it without a call;
 * 3. the due companies get the full check inline when few, or are sent to a queue when more than
 *    `inlineLimit`, where a worker (functions/check-key-rotations, SQS event source) checks them in
 *    batches with partial batch failures.
 */

export type DueReason = 'in_progress' | 'overdue' | 'due' | 'rotation_disabled';

/** One registry entry as the sweep needs it (the projection it scans). */
export interface RotationCandidate {
  companyId: string;
  /** Epoch ms before which the company's rotation needs no look; absent: look now. */
  checkAfter?: number;
}

/** The registry seen by the sweep: active companies a page at a time, and the check-after mark. */
export interface RotationCheckIndex {
  pages(): AsyncIterable<RotationCandidate[]>;
  setCheckAfter(companyId: string, at: number): Promise<void>;
}

/** A company the sweep found due, as a queued check carries it (ids and names only). */
export const queuedCheckSchema = /* @__PURE__ */ lazySchema(() =>
  z.object({
    companyId: z.string().min(1),
    secretId: z.string().min(1),
    name: z.string().min(1),
    reason: z.enum(['in_progress', 'overdue', 'due', 'rotation_disabled']),
    /**
     * The sweep's `repair`: a dry run (`{ "repair": false }`, `acctops doctor` without `--repair`)
     * stays dry for the companies it queues. Absent (messages from before): the worker's setting.
     */
    repair: z.boolean().optional(),
  }),
);
export type QueuedCheck = z.output<typeof queuedCheckSchema>;

/**
 * Parses a queued check's body as the refresh and export workers parse theirs: a ValidationError
 * names the field (`(root)` for text that is not JSON) and never quotes the body.
 */
export function decodeQueuedCheck(body: string, source = 'queued rotation check'): QueuedCheck {
  return parseJsonWith(queuedCheckSchema, body, source);
}

export interface RotationCheckQueue {
  /** Sends the checks (in batches of the queue's own size). */
  enqueue(checks: QueuedCheck[]): Promise<void>;
}

export interface SweepDeps extends Omit<DoctorDeps, 'directory'> {
  index: RotationCheckIndex;
  /**
   * DescribeSecret of the company's key secret (by its conventional name, else by tag for an
   * imported one); undefined when it has none, or only one scheduled for deletion.
   */
  describeCompanySecret(companyId: string): Promise<{ entry: CompanyKeyEntry; description: SecretDescription } | undefined>;
  /** Absent: every due company is checked inline. */
  queue?: RotationCheckQueue;
}

export interface SweepSettings extends DoctorSettings {
  /** Due companies checked inline at most; beyond, all go to the queue. @default 20 */
  inlineLimit?: number;
  /** DescribeSecret calls in flight. @default 16 */
  concurrency?: number;
  /** A company not due is looked at again after this long at the latest. @default 7 days */
  maxRecheckMs?: number;
  /**
   * Epoch ms after which no DescribeSecret is started (the handler: the invocation's remaining
   * time minus a reserve). Companies not described stay unmarked, so the next run takes them up;
   * absent: no budget (the CLI, tests).
   */
  deadline?: number;
}

export interface SweepReport extends DoctorReport {
  /** Active companies in the registry. */
  registered: number;
  /** DescribeSecret calls made (companies whose check-after mark was absent or past). */
  described: number;
  due: Record<DueReason, number>;
  /** Due companies sent to the queue (0 when checked inline). */
  queued: number;
  /**
   * Companies left for the next run because the deadline came: candidates of the pages read that
   * were not described (later pages are not read, so not counted). 0 when the sweep completed.
   */
  deferred: number;
  /** False when the deadline stopped the sweep before the registry's end. */
  complete: boolean;
}

const DAY = 24 * 3600_000;

/**
 * Whether a secret needs the full check now, from its description alone, and if not, when it
 * next might. Exported for the unit tests of the selection.
 */
export function dueReason(
  description: Pick<SecretDescription, 'versionStages' | 'rotation'>,
  now: number,
  settings: { overdueAfterMs?: number; maxRecheckMs?: number } = {},
): { reason: DueReason } | { reason: undefined; nextCheckAt: number } {
  // A given-up rotation's key is revoked (or found current) only by a later full check, which
  // takes the label off; until then the company stays due.
  const pending = Object.values(description.versionStages).some(
    (stages) =>
      (stages.includes(SecretStage.pending) && !stages.includes(SecretStage.current)) || stages.some((s) => givenUpAt(s) !== undefined),
  );
  if (pending) return { reason: 'in_progress' };
  const { rotation } = description;
  if (!rotation.enabled) return { reason: 'rotation_disabled' };
  const interval = rotation.automaticallyAfterDays === undefined ? undefined : rotation.automaticallyAfterDays * DAY;
  const dueAt =
    rotation.nextRotationAt ??
    (rotation.lastRotatedAt !== undefined && interval !== undefined ? rotation.lastRotatedAt + interval : undefined);
  // Rotation on but no date to go by: look.
  if (dueAt === undefined) return { reason: 'due' };
  if (now - dueAt > (settings.overdueAfterMs ?? DAY)) return { reason: 'overdue' };
  if (dueAt <= now) return { reason: 'due' };
  return { reason: undefined, nextCheckAt: Math.min(dueAt, now + (settings.maxRecheckMs ?? 7 * DAY)) };
}

export async function sweepKeyRotations(deps: SweepDeps, settings: SweepSettings): Promise<SweepReport> {
  const now = deps.clock.now();
  const inlineLimit = settings.inlineLimit ?? 20;
  const concurrency = Math.max(1, settings.concurrency ?? 16);
  const report: SweepReport = {
    checkedAt: now,
    companies: 0,
    findings: [],
    registered: 0,
    described: 0,
    due: { in_progress: 0, overdue: 0, due: 0, rotation_disabled: 0 },
    queued: 0,
    deferred: 0,
    complete: true,
  };
  const pastDeadline = (): boolean => settings.deadline !== undefined && deps.clock.now() >= settings.deadline;
  let held: QueuedCheck[] = [];
  let queueing = false;
  const findings: Finding[] = [];

  const flush = async (): Promise<void> => {
    if (held.length === 0) return;
    await deps.queue!.enqueue(held);
    report.queued += held.length;
    held = [];
  };

  for await (const page of deps.index.pages()) {
    if (pastDeadline()) {
      report.complete = false;
      break;
    }
    report.registered += page.length;
    const candidates = page.filter((c) => c.checkAfter === undefined || c.checkAfter <= now);
    await forEachLimited(candidates, concurrency, async ({ companyId }) => {
      // Checked per company, not per page: a first run describes every company, and one page of
      // 1,000 can take longer than the whole budget.
      if (pastDeadline()) {
        report.deferred += 1;
        report.complete = false;
        return;
      }
      report.described += 1;
      let found;
      try {
        found = await deps.describeCompanySecret(companyId);
      } catch (error) {
        findings.push({ type: 'check_failed', companyId, secret: '(unknown)', repaired: false, detail: describeDoctorError(error) });
        return;
      }
      if (!found) {
        findings.push(keyMissingFinding(companyId));
        return;
      }
      const decision = dueReason(found.description, now, settings);
      if (decision.reason === undefined) {
        try {
          await deps.index.setCheckAfter(companyId, decision.nextCheckAt);
        } catch (error) {
          // Only costs a DescribeSecret next run: the mark is an optimisation, not the truth.
          deps.logger.warn('rotation check-after mark not written', { companyId, error });
        }
        return;
      }
      report.due[decision.reason] += 1;
      held.push({ ...found.entry, reason: decision.reason, ...(settings.repair === undefined ? {} : { repair: settings.repair }) });
    });
    // Once more are due than an inline run should check, everything goes to the queue, page by page.
    if (deps.queue && (queueing || held.length > inlineLimit)) {
      queueing = true;
      await flush();
    }
  }

  // Past the deadline the inline checks (a dozen calls each) would risk the timeout: queue them.
  if (deps.queue && held.length > 0 && pastDeadline()) await flush();
  report.companies = held.length + report.queued;
  if (held.length > 0) {
    const byCompany = new Map<string, CompanyKeyEntry[]>();
    for (const { reason: _reason, repair: _repair, ...entry } of held) byCompany.set(entry.companyId, [entry]);
    findings.push(...(await examineCompanies(deps, settings, byCompany, now)));
  }
  report.findings = findings;
  deps.metrics.add('RotationCompaniesDescribed', report.described);
  deps.metrics.add('RotationCompaniesDue', report.companies);
  deps.metrics.add('RotationChecksQueued', report.queued);
  deps.metrics.add('RotationChecksDeferred', report.deferred);
  if (!report.complete) {
    deps.logger.warn('rotation sweep stopped at its deadline; the rest is left for the next run', {
      registeredRead: report.registered,
      described: report.described,
      deferred: report.deferred,
    });
  }
  return reportDoctorRun(deps, report);
}

/**
 * A registered, active company with no key secret of this stage (or only one scheduled for
 * deletion): every export of it fails until its key is installed. The sweep reports it; so does the
 * local mode's doctor, which checks the secrets by tag rather than through the sweep.
 */
export function keyMissingFinding(companyId: string): Finding {
  return {
    type: 'key_missing',
    companyId,
    secret: null,
    repaired: false,
    detail: `no key secret of this stage, so its exports fail: \`acctops keys install --company ${companyId}\` with its key in ACCTOPS_API_KEY, or \`acctops companies remove --company ${companyId}\` if it is not to be exported`,
  };
}

export interface QueuedBatchResult {
  /** Companies given the full check. */
  checked: number;
  findings: Finding[];
  failedMessageIds: string[];
  /** Companies whose queued check ended without a check, and why (SkippedCheckReason). */
  skipped: { companyId: string; reason: SkippedCheckReason }[];
}

/**
 * Why a queued check ended without checking: the company was removed from the registry
 * (`removedAt`), has no registry entry any more, or its secret is no longer due (a rotation or a
 * repair finished since the sweep queued it).
 */
export type SkippedCheckReason = 'company_removed' | 'company_not_registered' | 'not_due';

export interface QueuedCheckDeps extends Omit<DoctorDeps, 'directory'> {
  /**
   * The company's standing in the registry now (registryStanding, src/core/companies/company-removal.ts):
   * a check queued before `companies remove` must not repair, report or alarm on the company. Throws
   * when the registry cannot be read. Absent: no registry (every queued company is checked).
   */
  companyStanding?: (companyId: string) => Promise<CompanyStanding>;
}

/**
 * The worker's side: each message is one company's full check. A message that does not parse is a
 * batch item failure (bound for the DLQ after its receives); a check that failed is a finding, as
 * in the inline run, since the next sweep examines the company again anyway.
 *
 * A message can wait (the queue keeps it a day, a failed batch is received again), so before the
 * full check each company is asked again what the sweep asked: is it still registered and active
 * (one GetItem), and is its secret still due (one DescribeSecret of the secret the message names,
 * `dueReason`)? If not, its messages end quietly: an info line and `RotationChecksSkipped`
 * (dimension `Reason`), no finding, no repair, no event. A registry that cannot be read fails the
 * company's messages (retried, then the DLQ and its alarm) rather than act on a company that may
 * be gone. A DescribeSecret that fails or finds the secret deleted leaves the decision to the full
 * check, which reports it as before.
 */
export async function checkQueuedCompanies(
  deps: QueuedCheckDeps,
  settings: DoctorSettings,
  messages: { messageId: string; body: string }[],
): Promise<QueuedBatchResult> {
  const failedMessageIds: string[] = [];
  const byCompany = new Map<string, CompanyKeyEntry[]>();
  const messageIds = new Map<string, string[]>();
  // A company any of whose messages came from a dry run is only reported, never repaired.
  const dry = new Set<string>();
  for (const message of messages) {
    try {
      const { reason: _reason, repair, ...entry } = decodeQueuedCheck(message.body);
      byCompany.set(entry.companyId, [...(byCompany.get(entry.companyId) ?? []), entry]);
      messageIds.set(entry.companyId, [...(messageIds.get(entry.companyId) ?? []), message.messageId]);
      if ((repair ?? settings.repair ?? true) === false) dry.add(entry.companyId);
    } catch (error) {
      deps.logger.error('queued rotation check unreadable', { messageId: message.messageId, error });
      failedMessageIds.push(message.messageId);
    }
  }
  const now = deps.clock.now();
  const skipped: QueuedBatchResult['skipped'] = [];
  for (const [companyId, entries] of [...byCompany]) {
    let skip: { reason: SkippedCheckReason; detail: Record<string, unknown> } | undefined;
    try {
      skip = await whyNotCheck(deps, settings, companyId, entries, now);
    } catch (error) {
      deps.logger.error('queued rotation check not run: the company registry could not be read; the message is retried', {
        companyId,
        messageIds: messageIds.get(companyId),
        error,
      });
      failedMessageIds.push(...(messageIds.get(companyId) ?? []));
      byCompany.delete(companyId);
      continue;
    }
    if (skip === undefined) continue;
    byCompany.delete(companyId);
    skipped.push({ companyId, reason: skip.reason });
    deps.metrics.withDimensions({ Reason: skip.reason }).add('RotationChecksSkipped', 1);
    deps.logger.info(SKIP_MESSAGES[skip.reason], { companyId, reason: skip.reason, ...skip.detail });
  }
  const findings: Finding[] = [];
  for (const repair of [true, false]) {
    const group = new Map([...byCompany].filter(([companyId]) => dry.has(companyId) !== repair));
    if (group.size > 0) findings.push(...(await examineCompanies(deps, { ...settings, repair }, group, now)));
  }
  await reportDoctorRun(deps, { checkedAt: now, companies: byCompany.size, findings });
  return { checked: byCompany.size, findings, failedMessageIds, skipped };
}

const SKIP_MESSAGES: Record<SkippedCheckReason, string> = {
  company_removed: 'queued rotation check skipped: the company was removed from the registry after it was queued',
  company_not_registered: 'queued rotation check skipped: the company is no longer in the registry',
  not_due: 'queued rotation check skipped: the company is no longer due (its rotation or a repair finished since it was queued)',
};

/** Why the queued company is not to be checked now; undefined: check it. Throws only when the registry cannot be read. */
async function whyNotCheck(
  deps: QueuedCheckDeps,
  settings: DoctorSettings,
  companyId: string,
  entries: readonly CompanyKeyEntry[],
  now: number,
): Promise<{ reason: SkippedCheckReason; detail: Record<string, unknown> } | undefined> {
  if (deps.companyStanding) {
    const standing = await deps.companyStanding(companyId);
    if (standing.state === 'removed') return { reason: 'company_removed', detail: { removedAt: standing.removedAt } };
    if (standing.state === 'not_registered') return { reason: 'company_not_registered', detail: {} };
  }
  let due = false;
  for (const secretId of new Set(entries.map((e) => e.secretId))) {
    let description: SecretDescription;
    try {
      description = await deps.store.describeSecret(secretId);
    } catch {
      // The full check reads the same secret and reports why it cannot (check_failed).
      return undefined;
    }
    if (description.deletedAt !== undefined || dueReason(description, now, settings).reason !== undefined) due = true;
  }
  return due ? undefined : { reason: 'not_due', detail: { secretName: entries[0]?.name } };
}

/**
 * describeCompanySecret over a store: by the conventional name, else by tag; a deleted secret is none.
 *
 * The functions may describe a name under `acctops/<stage>/company/*` only if the secret carries the
 * stage's tags (lib/constructs/key-rotation.ts, grantCompanyKeysByTag). For a name with no secret
 * (an imported company's, whose secret has its own name, or a company without a secret) IAM has no
 * resource tag to compare, the condition is false and nothing allows the call: AWS answers
 * AccessDeniedException, not ResourceNotFoundException. So a refusal of the by-name lookup means
 * "not found by that name" too, and the tag lookup decides: it finds an imported secret, reports a
 * missing one as none (`key_missing`), and a real permission problem still fails there (ListSecrets,
 * or DescribeSecret of the secret it found).
 */
export function describeByNameOrTag(deps: {
  store: { describeSecret(secretId: string): Promise<SecretDescription> };
  directory: { find(companyId: string): Promise<CompanyKeyEntry> };
  nameOf(companyId: string): string;
}): SweepDeps['describeCompanySecret'] {
  return async (companyId) => {
    let description: SecretDescription | undefined;
    try {
      description = await deps.store.describeSecret(deps.nameOf(companyId));
    } catch (error) {
      if (!(error instanceof SecretNotFoundError || error instanceof SecretAccessDeniedError)) throw error;
    }
    if (description === undefined) {
      // An imported secret (cdk.json existingSecretArn) keeps its own name: one tag lookup.
      let entry: CompanyKeyEntry;
      try {
        entry = await deps.directory.find(companyId);
      } catch (error) {
        if (error instanceof Error && 'code' in error && error.code === 'company_key_not_found') return undefined;
        throw error;
      }
      description = await deps.store.describeSecret(entry.secretId);
    }
    if (description.deletedAt !== undefined) return undefined;
    return { entry: { companyId: companyId.toLowerCase(), secretId: description.secretArn, name: description.name }, description };
  };
}

async function forEachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++]!;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}

/**
 * The company key directory of the registry (`keys status` in AWS mode): the active companies a
 * page at a time, each company's secret found by DescribeSecret of its conventional name (an
 * imported one by tag), never by listing every secret. A registered company without a secret is
 * left out (the sweep reports it as `key_missing`).
 */
export function registeredKeyDirectory(deps: {
  pages(): AsyncIterable<{ companyId: string; removedAt?: string }[]>;
  describeCompanySecret: SweepDeps['describeCompanySecret'];
}): Pick<CompanyKeyDirectory, 'list'> {
  return {
    async *list() {
      for await (const page of deps.pages()) {
        for (const company of page) {
          if (company.removedAt !== undefined) continue;
          const found = await deps.describeCompanySecret(company.companyId);
          if (found) yield found.entry;
        }
      }
    },
  };
}
