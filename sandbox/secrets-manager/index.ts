import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Clock, systemClock } from '../../src/core/shared/clock';
import { EmulatedServiceError } from './errors';
import { RotationDriver, type RotationHandler, type RotationMode, type RotationRecord, type RotationStep } from './rotation';
import { type Input, isOperation, type Operation, parseInput, type RotationRules } from './schemas';
import { secretsSnapshotSchema, type SecretsManagerSnapshot } from './snapshot';
import { parseWith } from '../../src/core/shared/errors';
import { type SecretSnapshot, SecretsState } from './state';

export { ROTATION_STEPS } from './rotation';
export type { RotationEvent, RotationHandler, RotationMode, RotationRecord, RotationStep } from './rotation';
export type { Operation } from './schemas';
export type { SecretSnapshot } from './state';
export { SECRETS_SNAPSHOT_FORMAT, secretsSnapshotSchema, type SecretsManagerSnapshot } from './snapshot';
export type { RotationRules } from './schemas';

/** Answers the next matching calls with an error instead of serving them. */
export interface FaultSpec {
  /** An operation name such as `GetSecretValue`, or `*` for any. */
  operation: Operation | '*';
  /** The `__type` to return. Default `ThrottlingException`, which the SDK treats as throttling. */
  type?: string;
  message?: string;
  /** Default 400, as Secrets Manager answers throttling; 500 for `InternalServiceError`. */
  status?: number;
  /** How many calls fail. Default 1; `Infinity` until cleared. */
  count?: number;
  /** Matching calls to let through before failing. Default 0. */
  skip?: number;
}

/**
 * An identity policy's grant conditioned on resource tags, as IAM evaluates it for the caller:
 * `Allow <operations> on secrets named <namePrefix>* if aws:ResourceTag/<key> = <value>` for each
 * of `resourceTags`, and no other grant on that prefix. A request naming a secret under the prefix
 * whose tags do not match, or that does not exist (IAM then has no tag to compare, the condition
 * is false: an implicit deny), is answered AccessDeniedException, as AWS does. Requests naming
 * anything else, and operations not listed, are served as if allowed (the emulator's default).
 */
export interface TagConditionedGrant {
  /** The operations the grant covers, e.g. `['DescribeSecret']`, or `'*'`. */
  operations: readonly Operation[] | '*';
  /** The secret-name prefix of the grant's resource (`acctops/dev/company/` for `…:secret:acctops/dev/company/*`). */
  namePrefix: string;
  /** Tag key and value every covered secret must carry. */
  resourceTags: Record<string, string>;
}

export interface SecretsManagerOptions {
  /** Default 0: an ephemeral port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Dates (created, changed, rotated, deletion windows) come from this clock. */
  clock?: Clock;
  /** Region and account in the ARNs. Defaults `eu-central-1` and `000000000000`. */
  region?: string;
  accountId?: string;
  /** Default `sync`; see RotationMode. */
  rotationMode?: RotationMode;
  /** Rotation functions by Lambda ARN; more can be registered through `admin`. */
  rotationHandlers?: Record<string, RotationHandler>;
  faults?: FaultSpec[];
  /** Start with the secrets of an earlier emulator (`exportState()`), e.g. the CLI's local state. */
  state?: SecretsManagerSnapshot;
  /** The caller's tag-conditioned grants; none: every request is allowed. Same as `admin.setTagConditionedGrants`. */
  tagConditionedGrants?: TagConditionedGrant[];
  /**
   * The one access key id accepted (the `Credential=` of the SigV4 `Authorization` header); any
   * other request is refused as AWS refuses an unknown key. The signature is not checked: over
   * loopback a key id chosen at random per process is already a secret the host's other accounts
   * cannot learn (local mode, docs/security.md). None: every request is accepted.
   */
  accessKeyId?: string;
}

export interface SecretsManagerStats {
  /** Requests per operation, including those answered with an error or an injected fault. */
  calls: Partial<Record<Operation, number>>;
  /** Error answers by `__type`. */
  errors: Record<string, number>;
}

export interface SecretsManagerAdmin {
  registerRotationHandler(lambdaArn: string, handler: RotationHandler): void;
  unregisterRotationHandler(lambdaArn: string): void;
  setRotationMode(mode: RotationMode): void;
  /** The latest rotation started for the secret (by name or ARN). */
  rotation(secretId: string): RotationRecord | undefined;
  /** Every rotation attempt for the secret, oldest first. */
  rotations(secretId: string): RotationRecord[];
  /** Invokes one step of the latest rotation; rethrows the handler's error. */
  runRotationStep(secretId: string, step: RotationStep): Promise<RotationRecord>;
  /** Reattempts the latest unfinished rotation from createSecret with the same token. */
  retryRotation(secretId: string): Promise<RotationRecord>;
  /**
   * The secret's rotation coming due on its schedule: started as Secrets Manager starts it when
   * rotation is on; nothing (undefined) when it is off. The emulator has no clock-driven scheduler.
   */
  rotateOnSchedule(secretId: string): Promise<RotationRecord | undefined>;
  /** Resolves when background (`async` mode) rotations have finished. */
  settled(): Promise<void>;
  /** Replaces the caller's tag-conditioned grants (an empty list: every request is allowed again). */
  setTagConditionedGrants(grants: TagConditionedGrant[]): void;
  injectFault(fault: FaultSpec): void;
  clearFaults(): void;
  stats(): SecretsManagerStats;
  resetStats(): void;
  /** State without going through the API (not counted in stats). Holds secret values: tests only. */
  secret(secretId: string): SecretSnapshot | undefined;
  /**
   * Turns rotation on without rotating, as CloudFormation does for a RotationSchedule with
   * `RotateImmediatelyOnUpdate: false`: the configuration is stored and the next rotation dated,
   * no function is invoked. (RotateSecret with `RotateImmediately: false` would run testSecret.)
   */
  configureRotation(secretId: string, rotation: { lambdaArn: string; rules: RotationRules }): void;
  /** Every secret, version and label, for the `state` option of a later emulator. Holds secret values. */
  exportState(): SecretsManagerSnapshot;
}

export interface RunningSecretsManager {
  /** `http://127.0.0.1:<port>`: pass as the SDK client's `endpoint`. */
  endpoint: string;
  region: string;
  admin: SecretsManagerAdmin;
  stop(): Promise<void>;
}

const MAX_BODY = 1024 * 1024;

/** The access key id of a SigV4 `Authorization` header (`AWS4-HMAC-SHA256 Credential=<id>/<date>/…`). */
function accessKeyIdOf(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  return typeof header === 'string' ? /\bCredential=([^/,\s]+)\//.exec(header)?.[1] : undefined;
}

/**
 * A stateful Secrets Manager speaking awsJson1.1, for the real @aws-sdk/client-secrets-manager:
 * POST /, the operation in `X-Amz-Target: secretsmanager.<Operation>`, JSON in and out, errors
 * as status 400 `{"__type", "message"}`. Signatures are not checked (see `accessKeyId`).
 */
export async function startSecretsManager(options: SecretsManagerOptions = {}): Promise<RunningSecretsManager> {
  const region = options.region ?? 'eu-central-1';
  const state = new SecretsState(options.clock ?? systemClock, region, options.accountId ?? '000000000000');
  if (options.state) state.importState(parseWith(secretsSnapshotSchema, options.state, 'Secrets Manager emulator state'));
  const rotation = new RotationDriver(state, options.rotationMode ?? 'sync');
  for (const [arn, handler] of Object.entries(options.rotationHandlers ?? {})) rotation.register(arn, handler);
  let faults = (options.faults ?? []).map(normaliseFault);
  let stats: SecretsManagerStats = { calls: {}, errors: {} };
  let grants = [...(options.tagConditionedGrants ?? [])];
  const accountId = options.accountId ?? '000000000000';

  const checkAccess = (operation: Operation, input: unknown): void => {
    const secretId = (input as { SecretId?: unknown }).SecretId;
    if (typeof secretId !== 'string') return;
    const secret = state.find(secretId);
    // IAM evaluates the resource's ARN; of a secret that does not exist, the name the request gives.
    const name = secret?.name ?? (secretId.startsWith('arn:') ? (secretId.split(':secret:')[1] ?? '') : secretId);
    for (const grant of grants) {
      if (grant.operations !== '*' && !grant.operations.includes(operation)) continue;
      if (!name.startsWith(grant.namePrefix)) continue;
      const tags = new Map(secret?.tags.map((t) => [t.Key, t.Value]));
      if (secret !== undefined && Object.entries(grant.resourceTags).every(([key, value]) => tags.get(key) === value)) continue;
      throw new EmulatedServiceError(
        'AccessDeniedException',
        `User: arn:aws:sts::${accountId}:assumed-role/emulated/caller is not authorized to perform: secretsmanager:${operation} ` +
          `on resource: ${secretId} because no identity-based policy allows the secretsmanager:${operation} action`,
      );
    }
  };

  const operations: { [O in Operation]: (input: Input<O>) => unknown } = {
    CreateSecret: (i) => state.createSecret(i),
    GetSecretValue: (i) => state.getSecretValue(i),
    PutSecretValue: (i) => state.putSecretValue(i),
    DescribeSecret: (i) => state.describeSecret(i),
    UpdateSecretVersionStage: (i) => state.updateSecretVersionStage(i),
    ListSecrets: (i) => state.listSecrets(i),
    ListSecretVersionIds: (i) => state.listSecretVersionIds(i),
    DeleteSecret: (i) => state.deleteSecret(i),
    RestoreSecret: (i) => state.restoreSecret(i),
    TagResource: (i) => state.tagResource(i),
    UntagResource: (i) => state.untagResource(i),
    RotateSecret: (i) => rotation.rotateSecret(i),
    CancelRotateSecret: (i) => rotation.cancel(i),
    GetRandomPassword: (i) => state.getRandomPassword(i),
  };

  const takeFault = (operation: Operation): EmulatedServiceError | undefined => {
    const fault = faults.find((f) => (f.operation === '*' || f.operation === operation) && f.count > 0);
    if (!fault) return undefined;
    if (fault.skip > 0) {
      fault.skip -= 1;
      return undefined;
    }
    fault.count -= 1;
    return new EmulatedServiceError(fault.type, fault.message, fault.status);
  };

  const serve = async (req: IncomingMessage): Promise<unknown> => {
    const target = req.headers['x-amz-target'];
    const name = typeof target === 'string' && target.startsWith('secretsmanager.') ? target.slice('secretsmanager.'.length) : '';
    if (req.method !== 'POST' || !isOperation(name)) {
      throw new EmulatedServiceError('UnknownOperationException', `Operation ${name || '(none)'} is not supported by this emulator.`);
    }
    if (options.accessKeyId !== undefined && accessKeyIdOf(req) !== options.accessKeyId) {
      throw new EmulatedServiceError('UnrecognizedClientException', 'The security token included in the request is invalid.');
    }
    stats.calls[name] = (stats.calls[name] ?? 0) + 1;
    const body = await readJson(req);
    const fault = takeFault(name);
    if (fault) throw fault;
    state.purgeExpired();
    const handler = operations[name] as (input: unknown) => unknown;
    const input = parseInput(name, body);
    checkAccess(name, input);
    return handler(input);
  };

  const server = createServer((req, res) => {
    void serve(req)
      .then(
        (result) => ({ status: 200, payload: result }),
        (error: unknown) => {
          const e =
            error instanceof EmulatedServiceError
              ? error
              : new EmulatedServiceError('InternalServiceError', 'An error occurred on the server side.', 500, error);
          stats.errors[e.type] = (stats.errors[e.type] ?? 0) + 1;
          return { status: e.status, payload: { __type: e.type, message: e.message } };
        },
      )
      .then(({ status, payload }) => {
        const text = JSON.stringify(payload ?? {});
        res.writeHead(status, {
          'content-type': 'application/x-amz-json-1.1',
          'content-length': Buffer.byteLength(text),
          'x-amzn-requestid': randomUUID(),
        });
        res.end(text);
      });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;

  const admin: SecretsManagerAdmin = {
    registerRotationHandler: (arn, handler) => rotation.register(arn, handler),
    unregisterRotationHandler: (arn) => rotation.unregister(arn),
    setRotationMode: (mode) => {
      rotation.mode = mode;
    },
    rotation: (secretId) => {
      const secret = state.find(secretId);
      return secret && rotation.current(secret.arn);
    },
    rotations: (secretId) => {
      const secret = state.find(secretId);
      return secret ? rotation.records(secret.arn) : [];
    },
    runRotationStep: (secretId, step) => rotation.runStep(secretId, step),
    retryRotation: (secretId) => rotation.retry(secretId),
    rotateOnSchedule: (secretId) => rotation.rotateOnSchedule(secretId),
    settled: () => rotation.settled(),
    setTagConditionedGrants: (next) => {
      grants = [...next];
    },
    injectFault: (fault) => {
      faults.push(normaliseFault(fault));
    },
    clearFaults: () => {
      faults = [];
    },
    stats: () => ({ calls: { ...stats.calls }, errors: { ...stats.errors } }),
    resetStats: () => {
      stats = { calls: {}, errors: {} };
    },
    secret: (secretId) => state.snapshot(secretId),
    configureRotation: (secretId, { lambdaArn, rules }) => {
      state.configureRotation(
        state.resolveActive(secretId),
        lambdaArn,
        parseInput('RotateSecret', { SecretId: secretId, RotationRules: rules }).RotationRules,
      );
    },
    exportState: () => state.exportState(),
  };

  return {
    endpoint: `http://${address.address}:${address.port}`,
    region,
    admin,
    stop: async () => {
      await rotation.settled();
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}

function normaliseFault(fault: FaultSpec): Required<FaultSpec> {
  const type = fault.type ?? 'ThrottlingException';
  return {
    operation: fault.operation,
    type,
    message: fault.message ?? (type === 'ThrottlingException' ? 'Rate exceeded' : `Injected ${type}`),
    status: fault.status ?? (type === 'InternalServiceError' ? 500 : 400),
    count: fault.count ?? 1,
    skip: fault.skip ?? 0,
  };
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new EmulatedServiceError('SerializationException', 'Request body too large.');
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new EmulatedServiceError('SerializationException', 'Request body is not valid JSON.', 400, error);
  }
}
