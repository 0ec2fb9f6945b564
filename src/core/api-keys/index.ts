// API-key rotation through Secrets Manager (docs/architecture.md, "Key rotation").
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
  type DueRevocationsDeps,
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
} from './rotation-doctor';
export { type KeyStatus, type KeyStatusDeps, keyStatus, type RotateNowResult, type RotateNowDeps, rotateNow } from './key-status';
