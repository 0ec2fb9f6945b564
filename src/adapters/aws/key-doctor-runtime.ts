import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  companyKeySecretName,
  describeByNameOrTag,
  type DoctorDeps,
  type DoctorSettings,
  type QueuedCheckDeps,
  type SweepDeps,
  type SweepSettings,
  taggedKeyDirectory,
} from '../../core/api-keys';
import { type CompanyStanding, registryStanding } from '../../core/companies/company-removal';
import { requiredEnv } from '../../core/shared/env';
import type { Logger } from '../../core/shared/logger';
import type { Metrics } from '../../core/shared/metrics';
import { registryEntryReader } from './dynamodb-registry-entry';
import { DynamoDbRotationCheckIndex } from './dynamodb-rotation-check-index';
import { EventBridgePublisher } from './eventbridge-publisher';
import { AwsKeyRotationRuntime, KEY_EVENT_SOURCE } from './key-rotation-runtime';
import { type EventBridgeRevocationScheduler, revocationSchedulerFrom } from './revocation-scheduler';
import { SqsRotationCheckQueue } from './sqs-rotation-check-queue';

/**
 * check-key-rotations' root: the secret store and the service's client, the scheduler (pending
 * revocations), the key events, and for the registry sweep the registry's index and the fan-out queue
 * (and, for the queue's checks, the company's registry entry).
 */
export class AwsKeyDoctorRuntime extends AwsKeyRotationRuntime {
  private scheduler?: EventBridgeRevocationScheduler;
  private publisher?: EventBridgePublisher;
  private dynamo?: DynamoDBClient;
  private standing?: (companyId: string) => Promise<CompanyStanding>;

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

  /**
   * checkQueuedCompanies' deps: the doctor's, and with the registry (COMPANY_REGISTRY_TABLE_NAME) the
   * company's standing in it, one consistent GetItem per queued company.
   */
  queuedCheckDeps(scope: { logger: Logger; metrics: Metrics }): QueuedCheckDeps {
    const { directory: _all, ...rest } = this.doctorDeps(scope);
    const tableName = this.config.sweep?.registryTableName;
    if (tableName === undefined) return rest;
    this.standing ??= registryStanding(registryEntryReader({ client: this.dynamoDb(), tableName }));
    return { ...rest, companyStanding: this.standing };
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
      index: new DynamoDbRotationCheckIndex({ client: this.dynamoDb(), tableName: sweep.registryTableName }),
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

  private dynamoDb(): DynamoDBClient {
    return (this.dynamo ??= new DynamoDBClient({}));
  }

  private revocationScheduler(): EventBridgeRevocationScheduler {
    return (this.scheduler ??= revocationSchedulerFrom(this.config));
  }
}
