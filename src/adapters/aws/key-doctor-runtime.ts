import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  companyKeySecretName,
  describeByNameOrTag,
  type DoctorDeps,
  type DoctorSettings,
  type SweepDeps,
  type SweepSettings,
  taggedKeyDirectory,
} from '../../core/api-keys';
import { requiredEnv } from '../../core/shared/env';
import type { Logger } from '../../core/shared/logger';
import type { Metrics } from '../../core/shared/metrics';
import { DynamoDbRotationCheckIndex } from './dynamodb-rotation-check-index';
import { EventBridgePublisher } from './eventbridge-publisher';
import { AwsKeyRotationRuntime, KEY_EVENT_SOURCE } from './key-rotation-runtime';
import { type EventBridgeRevocationScheduler, revocationSchedulerFrom } from './revocation-scheduler';
import { SqsRotationCheckQueue } from './sqs-rotation-check-queue';

/**
 * check-key-rotations' root: the secret store and the service's client, the scheduler (pending
 * revocations), the key events, and for the registry sweep the registry's index and the fan-out queue.
 */
export class AwsKeyDoctorRuntime extends AwsKeyRotationRuntime {
  private scheduler?: EventBridgeRevocationScheduler;
  private publisher?: EventBridgePublisher;

  /** checkKeyRotations' deps, with this invocation's logger and metrics. */
  doctorDeps(scope: { logger: Logger; metrics: Metrics }): DoctorDeps {
    const { config } = this;
    if (config.eventBusName !== undefined) {
      // Events go out only with findings, so the EventBridge package loads on the first of them.
      this.publisher ??= new EventBridgePublisher({
        eventBusName: config.eventBusName,
        source: KEY_EVENT_SOURCE,
      });
    }
    return {
      store: this.store(),
      directory: taggedKeyDirectory(this.store(), { stage: config.stage }),
      scheduler: this.revocationScheduler(),
      clientFor: (key) => this.clientFor(key, scope.logger),
      events: this.publisher,
      clock: config.clock,
      ...scope,
    };
  }

  /** The doctor's thresholds, from the environment: part of checkKeyRotations' input. */
  doctorSettings(): DoctorSettings {
    return { graceMs: this.config.graceMs, ...this.config.doctor };
  }

  /** The registry sweep's deps, or undefined when the function has no registry (then checkKeyRotations is the whole run). */
  sweepDeps(scope: { logger: Logger; metrics: Metrics }): SweepDeps | undefined {
    const { sweep } = this.config;
    if (!sweep) return undefined;
    const stage = requiredEnv(this.config.stage, 'ACCTOPS_STAGE');
    const { directory: _all, ...rest } = this.doctorDeps(scope);
    const directory = taggedKeyDirectory(this.store(), { stage });
    return {
      ...rest,
      index: new DynamoDbRotationCheckIndex({ client: new DynamoDBClient({}), tableName: sweep.registryTableName }),
      describeCompanySecret: describeByNameOrTag({
        store: this.store(),
        directory,
        nameOf: (companyId) => companyKeySecretName(stage, companyId),
      }),
      // Only a run with more due companies than the inline limit queues them: SQS loads then.
      queue: sweep.queueUrl === undefined ? undefined : new SqsRotationCheckQueue({ queueUrl: sweep.queueUrl }),
    };
  }

  /** The sweep's thresholds, from the environment: part of sweepKeyRotations' input. */
  sweepSettings(): SweepSettings {
    return { ...this.doctorSettings(), inlineLimit: this.config.sweep?.inlineLimit };
  }

  private revocationScheduler(): EventBridgeRevocationScheduler {
    return (this.scheduler ??= revocationSchedulerFrom(this.config));
  }
}
