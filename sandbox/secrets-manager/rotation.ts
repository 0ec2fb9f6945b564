import { randomUUID } from 'node:crypto';
import { EmulatedServiceError, invalidParameter, invalidRequest } from './errors';
import type { Input } from './schemas';
import { AWSCURRENT, type SecretsState, type StoredSecret } from './state';

export type RotationStep = 'createSecret' | 'setSecret' | 'testSecret' | 'finishSecret';
export const ROTATION_STEPS: readonly RotationStep[] = ['createSecret', 'setSecret', 'testSecret', 'finishSecret'];

/** The event Secrets Manager sends to a rotation Lambda; `SecretId` is the secret's ARN. */
export interface RotationEvent {
  Step: RotationStep;
  SecretId: string;
  ClientRequestToken: string;
}

/** Stands in for the Lambda function registered under an ARN. A throw is a failed invocation. */
export type RotationHandler = (event: RotationEvent) => Promise<unknown> | unknown;

/**
 * - `sync`: RotateSecret answers after the steps ran (or one failed). Deterministic for tests.
 * - `async`: RotateSecret answers at once, as AWS does; `admin.settled()` waits for the steps.
 * - `manual`: RotateSecret only creates the AWSPENDING version; a test drives each step.
 */
export type RotationMode = 'sync' | 'async' | 'manual';

export interface RotationRecord {
  secretArn: string;
  /** The ClientRequestToken, which is also the id of the version being rotated in. */
  token: string;
  lambdaArn: string;
  /** `configuration-test`: RotateImmediately=false, which runs testSecret alone on a throwaway version. */
  kind: 'rotation' | 'configuration-test';
  /** `superseded`: left unfinished when another attempt started (a crash, then a retry). */
  status: 'pending' | 'running' | 'succeeded' | 'failed' | 'cancelled' | 'superseded';
  /** Steps that returned, in the order they ran (a retried rotation appends again). */
  invocations: { step: RotationStep; ok: boolean }[];
  failedStep?: RotationStep;
  error?: unknown;
  startedAt: number;
  finishedAt?: number;
}

/**
 * Runs Secrets Manager's side of rotation: label a new empty version AWSPENDING, then invoke the
 * function for createSecret, setSecret, testSecret and finishSecret, stopping at the first step
 * that throws and leaving AWSPENDING where it is. AWS retries a failed rotation by itself; here
 * a test retries explicitly (`retry`, or RotateSecret with the pending version's token).
 */
export class RotationDriver {
  private readonly handlers = new Map<string, RotationHandler>();
  private readonly history = new Map<string, RotationRecord[]>();
  private readonly inflight = new Set<Promise<void>>();

  constructor(
    private readonly state: SecretsState,
    public mode: RotationMode,
  ) {}

  register(lambdaArn: string, handler: RotationHandler): void {
    this.handlers.set(lambdaArn, handler);
  }

  unregister(lambdaArn: string): void {
    this.handlers.delete(lambdaArn);
  }

  async rotateSecret(input: Input<'RotateSecret'>) {
    const secret = this.state.resolveActive(input.SecretId);
    const lambdaArn = input.RotationLambdaARN ?? secret.rotationLambdaArn;
    if (!lambdaArn) throw invalidRequest('No Lambda rotation function ARN is associated with this secret.');
    if (!this.handlers.has(lambdaArn)) {
      throw new EmulatedServiceError(
        'AccessDeniedException',
        'Secrets Manager cannot invoke the specified Lambda function. Ensure that the function policy grants access to the principal secretsmanager.amazonaws.com.',
      );
    }
    const rules = input.RotationRules;
    if (rules && rules.AutomaticallyAfterDays === undefined && rules.ScheduleExpression === undefined) {
      throw invalidParameter('RotationRules needs AutomaticallyAfterDays or ScheduleExpression.');
    }
    const reply = (versionId: string) => ({ ARN: secret.arn, Name: secret.name, VersionId: versionId });

    const pending = this.state.pendingRotationVersion(secret);
    if (pending) {
      if (input.ClientRequestToken !== pending.id) {
        throw invalidRequest("A previous rotation isn't complete. That rotation will be reattempted.");
      }
      // The caller repeats the pending rotation's token: reattempt it from createSecret, as AWS's retries do.
      this.state.configureRotation(secret, lambdaArn, rules);
      const record = this.startRecord(secret, pending.id, lambdaArn, 'rotation');
      if (this.mode !== 'manual') await this.launch(() => this.drive(record, secret, ROTATION_STEPS));
      return reply(pending.id);
    }

    const token = input.ClientRequestToken ?? randomUUID();
    const existing = secret.versions.get(token);
    if (existing) {
      // A retried RotateSecret whose rotation already finished: nothing more to do.
      if (existing.stages.includes(AWSCURRENT)) return reply(token);
      throw invalidRequest(`A version with ClientRequestToken ${token} already exists and is not AWSPENDING.`);
    }
    this.state.configureRotation(secret, lambdaArn, rules);
    this.state.addPendingPlaceholder(secret, token);

    if (input.RotateImmediately === false) {
      // AWS checks the configuration by running testSecret on a version it then removes.
      const record = this.startRecord(secret, token, lambdaArn, 'configuration-test');
      await this.launch(async () => {
        await this.drive(record, secret, ['testSecret']);
        this.state.removeVersion(secret, token);
      });
      return reply(token);
    }
    const record = this.startRecord(secret, token, lambdaArn, 'rotation');
    if (this.mode !== 'manual') await this.launch(() => this.drive(record, secret, ROTATION_STEPS));
    return reply(token);
  }

  /**
   * What Secrets Manager does when a secret's rotation comes due on its schedule: nothing while
   * rotation is off (CancelRotateSecret); otherwise a rotation with the configured function, as
   * RotateSecret without arguments starts it. Undefined when nothing was started.
   */
  async rotateOnSchedule(secretId: string): Promise<RotationRecord | undefined> {
    const secret = this.state.resolveActive(secretId);
    if (!secret.rotationEnabled || !secret.rotationLambdaArn) return undefined;
    await this.rotateSecret({ SecretId: secret.arn });
    return this.current(secret.arn);
  }

  /** CancelRotateSecret: stops a running rotation before its next step; labels stay as they are. */
  cancel(input: Input<'CancelRotateSecret'>) {
    const secret = this.state.resolveActive(input.SecretId);
    const pending = this.state.pendingRotationVersion(secret);
    this.state.cancelRotation(secret);
    const current = this.current(secret.arn);
    if (current && (current.status === 'pending' || current.status === 'running')) {
      current.status = 'cancelled';
      current.finishedAt = this.state.now();
    }
    return { ARN: secret.arn, Name: secret.name, VersionId: pending?.id };
  }

  /** Invokes one step of the secret's latest rotation. The handler's error is rethrown. */
  async runStep(secretId: string, step: RotationStep): Promise<RotationRecord> {
    const secret = this.state.resolve(secretId);
    const record = this.current(secret.arn);
    if (!record) throw new Error(`no rotation was started for ${secret.name}`);
    await this.invoke(record, secret, step);
    return record;
  }

  /** Reattempts the secret's latest rotation from createSecret with the same token. */
  async retry(secretId: string): Promise<RotationRecord> {
    const secret = this.state.resolve(secretId);
    const last = this.current(secret.arn);
    if (!last || last.kind !== 'rotation') throw new Error(`no rotation was started for ${secret.name}`);
    if (last.status === 'succeeded') throw new Error(`the latest rotation of ${secret.name} already succeeded`);
    const record = this.startRecord(secret, last.token, last.lambdaArn, 'rotation');
    await this.drive(record, secret, ROTATION_STEPS);
    return record;
  }

  current(secretArn: string): RotationRecord | undefined {
    return this.history.get(secretArn)?.at(-1);
  }

  records(secretArn: string): RotationRecord[] {
    return [...(this.history.get(secretArn) ?? [])];
  }

  async settled(): Promise<void> {
    while (this.inflight.size > 0) await Promise.all(this.inflight);
  }

  private startRecord(secret: StoredSecret, token: string, lambdaArn: string, kind: RotationRecord['kind']): RotationRecord {
    const record: RotationRecord = {
      secretArn: secret.arn,
      token,
      lambdaArn,
      kind,
      status: 'pending',
      invocations: [],
      startedAt: this.state.now(),
    };
    const list = this.history.get(secret.arn) ?? [];
    const previous = list.at(-1);
    if (previous && (previous.status === 'pending' || previous.status === 'running')) {
      previous.status = 'superseded';
      previous.finishedAt = record.startedAt;
    }
    list.push(record);
    this.history.set(secret.arn, list);
    return record;
  }

  /** In `async` mode the work runs after the reply; otherwise the reply waits for it. */
  private async launch(work: () => Promise<void>): Promise<void> {
    if (this.mode !== 'async') return work();
    // drive() records failures itself; nothing may escape as an unhandled rejection.
    const running = work()
      .catch(() => undefined)
      .finally(() => this.inflight.delete(running));
    this.inflight.add(running);
  }

  private async drive(record: RotationRecord, secret: StoredSecret, steps: readonly RotationStep[]): Promise<void> {
    for (const step of steps) {
      if (record.status === 'cancelled' || record.status === 'superseded') return;
      try {
        await this.invoke(record, secret, step);
      } catch {
        // Recorded on the record; AWS reports it through CloudTrail, not to the RotateSecret caller.
        return;
      }
    }
    if (record.kind === 'configuration-test' && record.status === 'running') {
      record.status = 'succeeded';
      record.finishedAt = this.state.now();
    }
  }

  private async invoke(record: RotationRecord, secret: StoredSecret, step: RotationStep): Promise<void> {
    const handler = this.handlers.get(record.lambdaArn);
    record.status = 'running';
    try {
      if (!handler) throw new Error(`no rotation handler is registered for ${record.lambdaArn}`);
      await handler({ Step: step, SecretId: secret.arn, ClientRequestToken: record.token });
      if (step === 'finishSecret' && record.kind === 'rotation') this.verifyFinished(record, secret);
    } catch (error) {
      record.invocations.push({ step, ok: false });
      record.status = 'failed';
      record.failedStep = step;
      record.error = error;
      record.finishedAt = this.state.now();
      throw error;
    }
    record.invocations.push({ step, ok: true });
  }

  /** A rotation counts as done only when finishSecret really moved AWSCURRENT to the new version. */
  private verifyFinished(record: RotationRecord, secret: StoredSecret): void {
    const version = secret.versions.get(record.token);
    if (!version?.stages.includes(AWSCURRENT)) {
      throw new Error(`finishSecret returned but version ${record.token} is not AWSCURRENT`);
    }
    this.state.markRotated(secret);
    record.status = 'succeeded';
    record.finishedAt = this.state.now();
  }
}
