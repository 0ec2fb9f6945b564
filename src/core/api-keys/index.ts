// API-key rotation through Secrets Manager (docs/key-rotation.md).
export {
  type CompanyKeySecret,
  companyKeySecretSchema,
  parseCompanyKeySecret,
  serializeCompanyKeySecret,
  describeKey,
  samePermissions,
} from './company-key-secret';
export {
  COMPANY_KEY_TAGS,
  PURPOSE_COMPANY_KEY,
  type CompanyKeyDirectory,
  type CompanyKeyEntry,
  CompanyKeyNotFoundError,
  taggedKeyDirectory,
  companyKeySecretName,
} from './key-directory';
export { CompanyApiKeys, type CompanyApiKeysOptions } from './company-api-keys';
export {
  ROTATION_STEPS,
  type RotationStep,
  rotationEventSchema,
  type RotationEvent,
  rotationKeyName,
  rotationTokenOf,
  DEFAULT_GRACE_MS,
  type RotationSettings,
  rotationSettings,
  KeyRotationError,
  RotationGuardError,
  type KeyRotationDeps,
  type StepOutcome,
  KeyRotation,
  listKeys,
} from './rotation';
export {
  revocationSchema,
  type Revocation,
  type RevocationScheduler,
  type RevocationQueue,
  RevocationSchedulerError,
  type RevocationOutcome,
  type RevokeDeps,
  revokeApiKey,
  type DueRevocationsResult,
  runDueRevocations,
} from './revocation';
export {
  type FindingType,
  type Finding,
  type DoctorReport,
  type DoctorSettings,
  type DoctorDeps,
  FINDING_EVENT_TYPE,
  checkKeyRotations,
  examineCompanies,
  reportDoctorRun,
} from './rotation-doctor';
export {
  type DueReason,
  type RotationCandidate,
  type RotationCheckIndex,
  type QueuedCheck,
  queuedCheckSchema,
  type RotationCheckQueue,
  type SweepDeps,
  type SweepSettings,
  type SweepReport,
  dueReason,
  sweepKeyRotations,
  type QueuedBatchResult,
  checkQueuedCompanies,
  describeByNameOrTag,
  registeredKeyDirectory,
} from './rotation-sweep';
export { type KeyStatus, type KeyStatusDeps, keyStatus, type RotateNowResult, type RotateNowDeps, rotateNow } from './key-status';
export {
  type SecretLifecycle,
  type CompanyKeySecretTarget,
  type SecretOutcome,
  type RotationOutcome,
  type InstallOutcome,
  RECOVERY_WINDOW_DAYS,
  CompanyKeyProvisioningError,
  installCompanyKeySecret,
  type RetireOutcome,
  retireCompanyKeySecret,
} from './key-provisioning';
