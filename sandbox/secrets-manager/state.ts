import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import type { Clock } from '../../src/core/shared/clock';
import {
  EmulatedServiceError,
  invalidParameter,
  invalidRequest,
  markedForDeletion,
  resourceExists,
  secretNotFound,
  valueNotFound,
} from './errors';
import type { Input, RotationRules } from './schemas';
import { SECRETS_SNAPSHOT_FORMAT, type SecretsManagerSnapshot } from './snapshot';

export const AWSCURRENT = 'AWSCURRENT';
export const AWSPENDING = 'AWSPENDING';
export const AWSPREVIOUS = 'AWSPREVIOUS';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export interface StoredVersion {
  id: string;
  seq: number;
  /** Absent on the placeholder that RotateSecret creates before createSecret has run. */
  value?: { SecretString?: string; SecretBinary?: string };
  stages: string[];
  createdAt: number;
  lastAccessedAt?: number;
}

export interface StoredSecret {
  seq: number;
  arn: string;
  name: string;
  description?: string;
  kmsKeyId?: string;
  tags: { Key: string; Value: string }[];
  createdAt: number;
  lastChangedAt: number;
  lastAccessedAt?: number;
  deletedAt?: number;
  deletionDate?: number;
  rotationEnabled: boolean;
  rotationLambdaArn?: string;
  rotationRules?: RotationRules;
  lastRotatedAt?: number;
  nextRotationAt?: number;
  versions: Map<string, StoredVersion>;
}

/** awsJson1.1 sends timestamps as epoch seconds. */
const epoch = (ms: number | undefined): number | undefined => (ms === undefined ? undefined : ms / 1000);

/** Secrets Manager records access dates to the day only. */
const startOfDay = (ms: number): number => ms - (ms % DAY);

const SUFFIX_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const PUNCTUATION = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';

/**
 * The emulator's state and the synchronous operations on it. Every rule about staging labels lives
 * here, in `attach`, so that PutSecretValue, UpdateSecretVersionStage and rotation move labels the
 * same way.
 */
export class SecretsState {
  /** By name; `byArn` indexes the same secrets by full and by partial ARN, kept in step by `add`/`remove`. */
  private readonly secrets = new Map<string, StoredSecret>();
  private readonly byArn = new Map<string, StoredSecret>();
  private readonly byPartialArn = new Map<string, StoredSecret>();
  /**
   * No scheduled deletion falls before this instant, so a request earlier than it has nothing to
   * purge and skips the scan: at fleet scale (10,000 secrets) scanning on every request made the
   * emulator the bottleneck. It may be too early (after a restore or a forced delete), which costs
   * one scan that recomputes it; it is never too late.
   */
  private earliestDeletion = Number.POSITIVE_INFINITY;
  private seq = 0;

  constructor(
    private readonly clock: Clock,
    private readonly region: string,
    private readonly accountId: string,
  ) {}

  now(): number {
    return this.clock.now();
  }

  /** Every secret, version and label, as JSON-safe data (./snapshot.ts). */
  exportState(): SecretsManagerSnapshot {
    return {
      format: SECRETS_SNAPSHOT_FORMAT,
      formatVersion: 1,
      seq: this.seq,
      secrets: [...this.secrets.values()].map(({ versions, ...secret }) =>
        structuredClone({ ...secret, versions: [...versions.values()] }),
      ),
    };
  }

  /** Replaces the state with a snapshot's (an emulator starting where an earlier one stopped). */
  importState(snapshot: SecretsManagerSnapshot): void {
    this.secrets.clear();
    this.byArn.clear();
    this.byPartialArn.clear();
    this.earliestDeletion = Number.POSITIVE_INFINITY;
    this.seq = snapshot.seq;
    for (const { versions, ...secret } of structuredClone(snapshot.secrets)) {
      this.add({ ...secret, versions: new Map(versions.map((v) => [v.id, v])) });
      if (secret.deletionDate !== undefined) this.earliestDeletion = Math.min(this.earliestDeletion, secret.deletionDate);
    }
  }

  /** Scheduled deletions take effect lazily, when the clock has passed their date. */
  purgeExpired(): void {
    const now = this.now();
    if (now < this.earliestDeletion) return;
    let earliest = Number.POSITIVE_INFINITY;
    for (const secret of [...this.secrets.values()]) {
      if (secret.deletionDate === undefined) continue;
      if (secret.deletionDate <= now) this.remove(secret);
      else earliest = Math.min(earliest, secret.deletionDate);
    }
    this.earliestDeletion = earliest;
  }

  /** By name, full ARN, or partial ARN (the ARN without its random suffix). */
  find(secretId: string): StoredSecret | undefined {
    if (!secretId.startsWith('arn:')) return this.secrets.get(secretId);
    return this.byArn.get(secretId) ?? this.byPartialArn.get(secretId);
  }

  private add(secret: StoredSecret): void {
    this.secrets.set(secret.name, secret);
    this.byArn.set(secret.arn, secret);
    this.byPartialArn.set(partialArn(secret.arn), secret);
  }

  private remove(secret: StoredSecret): void {
    this.secrets.delete(secret.name);
    this.byArn.delete(secret.arn);
    this.byPartialArn.delete(partialArn(secret.arn));
  }

  resolve(secretId: string): StoredSecret {
    const secret = this.find(secretId);
    if (!secret) throw secretNotFound();
    return secret;
  }

  resolveActive(secretId: string): StoredSecret {
    const secret = this.resolve(secretId);
    if (secret.deletedAt !== undefined) throw markedForDeletion();
    return secret;
  }

  createSecret(input: Input<'CreateSecret'>) {
    const value = valueOf(input, false);
    const existing = this.secrets.get(input.Name);
    if (existing) {
      if (existing.deletedAt !== undefined) {
        throw invalidRequest("You can't create this secret because a secret with this name is already scheduled for deletion.");
      }
      // A retried CreateSecret (same token, same value) is answered as the first one was.
      const retried = input.ClientRequestToken ? existing.versions.get(input.ClientRequestToken) : undefined;
      if (retried && value && sameValue(retried.value, value)) {
        return { ARN: existing.arn, Name: existing.name, VersionId: retried.id };
      }
      throw resourceExists(`The operation failed because the secret ${input.Name} already exists.`);
    }
    const now = this.now();
    const secret: StoredSecret = {
      seq: ++this.seq,
      arn: `arn:aws:secretsmanager:${this.region}:${this.accountId}:secret:${input.Name}-${randomSuffix()}`,
      name: input.Name,
      description: input.Description,
      kmsKeyId: input.KmsKeyId,
      tags: [],
      createdAt: now,
      lastChangedAt: now,
      rotationEnabled: false,
      versions: new Map(),
    };
    mergeTags(secret, input.Tags ?? []);
    this.add(secret);
    if (!value) return { ARN: secret.arn, Name: secret.name };
    const version = this.addVersion(secret, input.ClientRequestToken ?? randomUUID(), value);
    attach(secret, version, AWSCURRENT);
    return { ARN: secret.arn, Name: secret.name, VersionId: version.id };
  }

  getSecretValue(input: Input<'GetSecretValue'>) {
    const secret = this.resolveActive(input.SecretId);
    let version: StoredVersion | undefined;
    let what: string;
    if (input.VersionId !== undefined) {
      what = `VersionId: ${input.VersionId}`;
      version = secret.versions.get(input.VersionId);
      if (version && input.VersionStage !== undefined && !version.stages.includes(input.VersionStage)) {
        throw invalidRequest('You provided a VersionStage that is not associated to the provided VersionId.');
      }
    } else {
      const stage = input.VersionStage ?? AWSCURRENT;
      what = `staging label: ${stage}`;
      version = holderOf(secret, stage);
    }
    if (!version?.value) throw valueNotFound(what);
    const today = startOfDay(this.now());
    secret.lastAccessedAt = today;
    version.lastAccessedAt = today;
    return {
      ARN: secret.arn,
      Name: secret.name,
      VersionId: version.id,
      ...version.value,
      VersionStages: [...version.stages],
      CreatedDate: epoch(version.createdAt),
    };
  }

  putSecretValue(input: Input<'PutSecretValue'>) {
    const secret = this.resolveActive(input.SecretId);
    const value = valueOf(input, true)!;
    const token = input.ClientRequestToken ?? randomUUID();
    let version = secret.versions.get(token);
    if (version?.value) {
      if (!sameValue(version.value, value)) {
        throw resourceExists("You can't modify an existing version, you can only create a new version.");
      }
      // Same token and same value: a retry, ignored as the API reference describes.
      return { ARN: secret.arn, Name: secret.name, VersionId: version.id, VersionStages: [...version.stages] };
    }
    if (version) version.value = value;
    else version = this.addVersion(secret, token, value);
    const stages = input.VersionStages ?? [AWSCURRENT];
    // The first version with a value becomes current whatever labels were asked for.
    if (!holderOf(secret, AWSCURRENT) && !stages.includes(AWSCURRENT)) stages.push(AWSCURRENT);
    for (const stage of stages) attach(secret, version, stage);
    secret.lastChangedAt = this.now();
    return { ARN: secret.arn, Name: secret.name, VersionId: version.id, VersionStages: [...version.stages] };
  }

  describeSecret(input: Input<'DescribeSecret'>) {
    const secret = this.resolve(input.SecretId);
    return { ...metadata(secret), VersionIdsToStages: versionsToStages(secret) };
  }

  updateSecretVersionStage(input: Input<'UpdateSecretVersionStage'>) {
    const secret = this.resolveActive(input.SecretId);
    const { VersionStage: stage, MoveToVersionId: to, RemoveFromVersionId: from } = input;
    if (to === undefined && from === undefined) {
      throw invalidParameter('You must specify MoveToVersionId, RemoveFromVersionId, or both.');
    }
    const holder = holderOf(secret, stage);
    if (from !== undefined) {
      if (!secret.versions.has(from)) throw invalidParameter(`Secrets Manager can't find version ${from}.`);
      if (holder?.id !== from) {
        throw invalidParameter(`The staging label ${stage} isn't attached to version ${from}.`);
      }
    }
    if (to !== undefined) {
      const target = secret.versions.get(to);
      if (!target) throw invalidParameter(`Secrets Manager can't find version ${to}.`);
      if (holder && holder !== target && from === undefined) {
        throw invalidParameter(
          `The parameter RemoveFromVersionId can't be empty. Staging label ${stage} is currently attached to version ${holder.id}, so you must explicitly reference that version in RemoveFromVersionId.`,
        );
      }
      attach(secret, target, stage);
    } else {
      if (stage === AWSCURRENT) {
        throw invalidParameter("You can only move staging label AWSCURRENT to a different secret version. It can't be completely removed.");
      }
      detach(holder!, stage);
    }
    secret.lastChangedAt = this.now();
    return { ARN: secret.arn, Name: secret.name };
  }

  listSecrets(input: Input<'ListSecrets'>) {
    const filters = input.Filters ?? [];
    const matching = [...this.secrets.values()].filter(
      (s) => (input.IncludePlannedDeletion || s.deletedAt === undefined) && filters.every((f) => matchesFilter(s, f.Key, f.Values)),
    );
    const page = paginate(matching, input.SortOrder ?? 'asc', input.MaxResults ?? 100, input.NextToken);
    return {
      SecretList: page.items.map((s) => ({ ...metadata(s), SecretVersionsToStages: versionsToStages(s) })),
      NextToken: page.nextToken,
    };
  }

  listSecretVersionIds(input: Input<'ListSecretVersionIds'>) {
    const secret = this.resolve(input.SecretId);
    const versions = [...secret.versions.values()].filter((v) => input.IncludeDeprecated || v.stages.length > 0);
    const page = paginate(versions, 'desc', input.MaxResults ?? 100, input.NextToken);
    return {
      ARN: secret.arn,
      Name: secret.name,
      Versions: page.items.map((v) => ({
        VersionId: v.id,
        VersionStages: [...v.stages],
        CreatedDate: epoch(v.createdAt),
        LastAccessedDate: epoch(v.lastAccessedAt),
      })),
      NextToken: page.nextToken,
    };
  }

  deleteSecret(input: Input<'DeleteSecret'>) {
    const secret = this.resolve(input.SecretId);
    if (input.ForceDeleteWithoutRecovery && input.RecoveryWindowInDays !== undefined) {
      throw invalidParameter("You can't use ForceDeleteWithoutRecovery in conjunction with RecoveryWindowInDays.");
    }
    const now = this.now();
    if (input.ForceDeleteWithoutRecovery) {
      this.remove(secret);
      return { ARN: secret.arn, Name: secret.name, DeletionDate: epoch(now) };
    }
    if (secret.deletedAt !== undefined) throw markedForDeletion();
    secret.deletedAt = now;
    secret.deletionDate = now + (input.RecoveryWindowInDays ?? 30) * DAY;
    this.earliestDeletion = Math.min(this.earliestDeletion, secret.deletionDate);
    return { ARN: secret.arn, Name: secret.name, DeletionDate: epoch(secret.deletionDate) };
  }

  restoreSecret(input: Input<'RestoreSecret'>) {
    const secret = this.resolve(input.SecretId);
    delete secret.deletedAt;
    delete secret.deletionDate;
    secret.lastChangedAt = this.now();
    return { ARN: secret.arn, Name: secret.name };
  }

  tagResource(input: Input<'TagResource'>) {
    const secret = this.resolveActive(input.SecretId);
    mergeTags(secret, input.Tags);
    secret.lastChangedAt = this.now();
    return {};
  }

  untagResource(input: Input<'UntagResource'>) {
    const secret = this.resolveActive(input.SecretId);
    secret.tags = secret.tags.filter((t) => !input.TagKeys.includes(t.Key));
    secret.lastChangedAt = this.now();
    return {};
  }

  getRandomPassword(input: Input<'GetRandomPassword'>) {
    const length = input.PasswordLength ?? 32;
    const exclude = new Set(input.ExcludeCharacters ?? '');
    const sets = [
      input.ExcludeLowercase ? '' : 'abcdefghijklmnopqrstuvwxyz',
      input.ExcludeUppercase ? '' : 'ABCDEFGHIJKLMNOPQRSTUVWXYZ',
      input.ExcludeNumbers ? '' : '0123456789',
      input.ExcludePunctuation ? '' : PUNCTUATION,
      input.IncludeSpace ? ' ' : '',
    ]
      .map((set) => [...set].filter((c) => !exclude.has(c)).join(''))
      .filter((set) => set.length > 0);
    const requireEach = input.RequireEachIncludedType ?? true;
    if (sets.length === 0 || (requireEach && length < sets.length)) {
      throw invalidParameter('The password length is too short or every character type is excluded.');
    }
    const all = sets.join('');
    const chars = requireEach ? sets.map(pick) : [];
    while (chars.length < length) chars.push(pick(all));
    for (let i = chars.length - 1; i > 0; i--) {
      const j = randomInt(i + 1);
      [chars[i], chars[j]] = [chars[j]!, chars[i]!];
    }
    return { RandomPassword: chars.join('') };
  }

  // ---- used by the rotation driver -------------------------------------------------------------

  /** The version labelled AWSPENDING but not AWSCURRENT: the sign of a rotation in progress. */
  pendingRotationVersion(secret: StoredSecret): StoredVersion | undefined {
    const pending = holderOf(secret, AWSPENDING);
    return pending && !pending.stages.includes(AWSCURRENT) ? pending : undefined;
  }

  /** What RotateSecret does before invoking the function: an empty version labelled AWSPENDING. */
  addPendingPlaceholder(secret: StoredSecret, token: string): StoredVersion {
    const version = this.addVersion(secret, token, undefined);
    attach(secret, version, AWSPENDING);
    secret.lastChangedAt = this.now();
    return version;
  }

  removeVersion(secret: StoredSecret, versionId: string): void {
    secret.versions.delete(versionId);
  }

  configureRotation(secret: StoredSecret, lambdaArn: string, rules: RotationRules | undefined): void {
    secret.rotationEnabled = true;
    secret.rotationLambdaArn = lambdaArn;
    if (rules) secret.rotationRules = rules;
    secret.nextRotationAt = nextRotation(secret.rotationRules, secret.lastRotatedAt ?? this.now());
    secret.lastChangedAt = this.now();
  }

  markRotated(secret: StoredSecret): void {
    const now = this.now();
    secret.lastRotatedAt = now;
    secret.nextRotationAt = nextRotation(secret.rotationRules, now);
  }

  cancelRotation(secret: StoredSecret): void {
    secret.rotationEnabled = false;
    delete secret.nextRotationAt;
    secret.lastChangedAt = this.now();
  }

  /** A read-only view for tests and the CLI, which does not count as an API call. */
  snapshot(secretId: string) {
    const secret = this.find(secretId);
    if (!secret) return undefined;
    return {
      arn: secret.arn,
      name: secret.name,
      deleted: secret.deletedAt !== undefined,
      rotationEnabled: secret.rotationEnabled,
      versions: [...secret.versions.values()].map((v) => ({
        versionId: v.id,
        stages: [...v.stages],
        secretString: v.value?.SecretString,
        hasValue: v.value !== undefined,
        createdAt: v.createdAt,
      })),
    };
  }

  private addVersion(secret: StoredSecret, id: string, value: StoredVersion['value']): StoredVersion {
    const version: StoredVersion = { id, seq: ++this.seq, value, stages: [], createdAt: this.now() };
    secret.versions.set(id, version);
    return version;
  }
}

/** The ARN without the `-` and six random characters that Secrets Manager appends to the name. */
const partialArn = (arn: string): string => arn.slice(0, -7);

export type SecretSnapshot = NonNullable<ReturnType<SecretsState['snapshot']>>;

function holderOf(secret: StoredSecret, stage: string): StoredVersion | undefined {
  for (const version of secret.versions.values()) if (version.stages.includes(stage)) return version;
  return undefined;
}

function detach(version: StoredVersion, stage: string): void {
  version.stages = version.stages.filter((s) => s !== stage);
}

/**
 * A label lives on one version at a time. Moving AWSCURRENT leaves AWSPREVIOUS on the version it
 * came from, as PutSecretValue and UpdateSecretVersionStage document.
 */
function attach(secret: StoredSecret, version: StoredVersion, stage: string): void {
  const holder = holderOf(secret, stage);
  if (holder === version) return;
  if (holder) detach(holder, stage);
  version.stages.push(stage);
  if (stage === AWSCURRENT && holder) attach(secret, holder, AWSPREVIOUS);
}

function versionsToStages(secret: StoredSecret): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  // Versions without labels are deprecated and not listed, as in the real service.
  for (const v of secret.versions.values()) if (v.stages.length > 0) out[v.id] = [...v.stages];
  return out;
}

function metadata(secret: StoredSecret) {
  return {
    ARN: secret.arn,
    Name: secret.name,
    Description: secret.description,
    KmsKeyId: secret.kmsKeyId,
    RotationEnabled: secret.rotationEnabled,
    RotationLambdaARN: secret.rotationLambdaArn,
    RotationRules: secret.rotationRules,
    LastRotatedDate: epoch(secret.lastRotatedAt),
    LastChangedDate: epoch(secret.lastChangedAt),
    LastAccessedDate: epoch(secret.lastAccessedAt),
    DeletedDate: epoch(secret.deletedAt),
    NextRotationDate: secret.rotationEnabled ? epoch(secret.nextRotationAt) : undefined,
    Tags: secret.tags.length > 0 ? secret.tags.map((t) => ({ ...t })) : undefined,
    CreatedDate: epoch(secret.createdAt),
  };
}

function valueOf(input: { SecretString?: string; SecretBinary?: string }, required: boolean): StoredVersion['value'] {
  if (input.SecretString !== undefined && input.SecretBinary !== undefined) {
    throw invalidParameter("You can't specify both SecretString and SecretBinary.");
  }
  if (input.SecretString !== undefined) return { SecretString: input.SecretString };
  if (input.SecretBinary !== undefined) return { SecretBinary: input.SecretBinary };
  if (required) throw invalidRequest('You must provide either SecretString or SecretBinary.');
  return undefined;
}

function sameValue(a: StoredVersion['value'], b: StoredVersion['value']): boolean {
  return a?.SecretString === b?.SecretString && a?.SecretBinary === b?.SecretBinary;
}

function mergeTags(secret: StoredSecret, tags: { Key: string; Value: string }[]): void {
  for (const { Key, Value } of tags) {
    const existing = secret.tags.find((t) => t.Key === Key);
    if (existing) existing.Value = Value;
    else secret.tags.push({ Key, Value });
  }
}

/**
 * Filter semantics of the API reference: prefix matches, case-sensitive except `description` and
 * `all`; a leading `!` negates; values of one filter are alternatives, filters must all match.
 * Like the real service, `tag-key` and `tag-value` match independently of each other.
 */
function matchesFilter(secret: StoredSecret, key: string, values: string[]): boolean {
  const candidates = (): string[] => {
    switch (key) {
      case 'name':
        return [secret.name];
      case 'description':
        return [secret.description ?? ''];
      case 'tag-key':
        return secret.tags.map((t) => t.Key);
      case 'tag-value':
        return secret.tags.map((t) => t.Value);
      case 'all':
        return [secret.name, secret.description ?? '', ...secret.tags.flatMap((t) => [t.Key, t.Value])];
      default:
        // primary-region and owning-service: the emulator has neither replicas nor managed secrets.
        return [];
    }
  };
  const caseless = key === 'description' || key === 'all';
  const norm = (s: string) => (caseless ? s.toLowerCase() : s);
  return values.some((raw) => {
    const negate = raw.startsWith('!');
    const value = norm(negate ? raw.slice(1) : raw);
    const hit =
      key === 'all'
        ? value
            .split(/[^a-z0-9]+/)
            .filter(Boolean)
            .some((word) => candidates().some((c) => norm(c).includes(word)))
        : candidates().some((c) => norm(c).startsWith(value));
    return negate ? !hit : hit;
  });
}

/**
 * The token names the last item returned (by its creation sequence), so a page boundary stays
 * put when secrets are created or deleted between calls.
 */
function paginate<T extends { seq: number }>(
  items: T[],
  order: 'asc' | 'desc',
  maxResults: number,
  nextToken: string | undefined,
): { items: T[]; nextToken?: string } {
  const sorted = [...items].sort((a, b) => (order === 'asc' ? a.seq - b.seq : b.seq - a.seq));
  let start = 0;
  if (nextToken !== undefined) {
    const after = decodeToken(nextToken);
    start = sorted.findIndex((i) => (order === 'asc' ? i.seq > after : i.seq < after));
    if (start < 0) start = sorted.length;
  }
  const page = sorted.slice(start, start + maxResults);
  const last = page.at(-1);
  const more = start + maxResults < sorted.length;
  return { items: page, nextToken: more && last ? Buffer.from(JSON.stringify({ after: last.seq })).toString('base64url') : undefined };
}

function decodeToken(token: string): number {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
    if (typeof parsed === 'object' && parsed !== null && 'after' in parsed && Number.isInteger(parsed.after)) {
      return parsed.after as number;
    }
  } catch {
    // fall through: any undecodable token is invalid
  }
  throw new EmulatedServiceError('InvalidNextTokenException', 'The NextToken value is invalid.');
}

function nextRotation(rules: RotationRules | undefined, from: number): number | undefined {
  const rate = rules?.ScheduleExpression && /^rate\((\d+) (hour|day)s?\)$/.exec(rules.ScheduleExpression);
  if (rate) return from + Number(rate[1]) * (rate[2] === 'hour' ? HOUR : DAY);
  if (rules?.AutomaticallyAfterDays !== undefined && !rules.ScheduleExpression) return from + rules.AutomaticallyAfterDays * DAY;
  // cron() schedules are accepted but not evaluated: NextRotationDate stays unset.
  return undefined;
}

function randomSuffix(): string {
  return [...randomBytes(6)].map((b) => SUFFIX_ALPHABET[b % SUFFIX_ALPHABET.length]).join('');
}

function pick(set: string): string {
  return set[randomInt(set.length)]!;
}
