import { Annotations, type Stack } from 'aws-cdk-lib';
import { AWS_MANAGED_SECRETS_KEY, kmsKeyArnParts, secretArnParts, type StageConfig } from '../config/stage';

/** Warning ids (`Annotations.acknowledgeWarning` takes them), one per kind of stage setting. */
export const STAGE_WARNINGS = {
  noAlarmDestination: 'acctops:stage.noAlarmDestination',
  importedSecretEnvironment: 'acctops:stage.importedSecretEnvironment',
  importedSecretKmsKey: 'acctops:stage.importedSecretKmsKey',
  opsTopicRegion: 'acctops:stage.opsTopicRegion',
  kmsKeyRegion: 'acctops:stage.kmsKeyRegion',
} as const;

/**
 * Synth warnings for stage settings that are valid but probably wrong. What is certainly wrong is
 * refused by the schema (lib/config/stage.ts); these depend on what happens outside the stack, so
 * they warn rather than fail: a first deploy without subscribers is normal, and an
 * environment-agnostic stack learns its account and region only at deploy.
 */
export function warnAboutStage(stack: Stack, stage: StageConfig): void {
  const field = (name: string) => `stages.${stage.name}.${name}`;
  const annotations = Annotations.of(stack);
  if (stage.retainData && stage.alarmEmails.length === 0 && stage.opsTopicArn === undefined) {
    annotations.addWarningV2(
      STAGE_WARNINGS.noAlarmDestination,
      `${field('alarmEmails')} is empty and ${field('opsTopicArn')} is not set: the alarms of this stage (retainData: it keeps data) ` +
        'notify a topic nobody receives until an endpoint is subscribed to its AlarmTopicArn outside the stack. ' +
        `Set ${field('alarmEmails')} or ${field('opsTopicArn')} (docs/monitoring.md, "Notifications").`,
    );
  }
  // Which key encrypts an imported secret is known only to AWS (synth runs offline), and a
  // customer-managed one left out fails only at the first rotation: warn until the stage says.
  stage.companies.forEach((company, index) => {
    if (company.existingSecretArn === undefined || company.existingSecretKmsKeyArn !== undefined) return;
    const key = field(`companies[${index}].existingSecretKmsKeyArn`);
    annotations.addWarningV2(
      STAGE_WARNINGS.importedSecretKmsKey,
      `${field(`companies[${index}].existingSecretArn`)} is imported without ${key}: if the secret is encrypted with a customer managed ` +
        `KMS key, set ${key} to that key's ARN, else its rotation fails with AccessDenied from KMS. With the AWS managed key ` +
        `${AWS_MANAGED_SECRETS_KEY} nothing is needed; set ${key} to '${AWS_MANAGED_SECRETS_KEY}' to say so and silence this ` +
        `warning (aws secretsmanager describe-secret --secret-id <ARN> --query KmsKeyId: empty for the AWS managed key).`,
    );
  });
  if (stage.account !== undefined) return;
  // Environment-agnostic: the schema could compare the imported ARNs only with each other.
  stage.companies.forEach((company, index) => {
    const parts = company.existingSecretArn === undefined ? undefined : secretArnParts(company.existingSecretArn);
    if (parts === undefined) return;
    annotations.addWarningV2(
      STAGE_WARNINGS.importedSecretEnvironment,
      `${field(`companies[${index}].existingSecretArn`)} is in account ${parts.account}, region ${parts.region}; rotation works only if ` +
        `the stack deploys there, and this stage pins no environment. Set ${field('account')} and ${field('region')} to have synth check it.`,
    );
  });
  if (stage.opsTopicArn !== undefined) {
    annotations.addWarningV2(
      STAGE_WARNINGS.opsTopicRegion,
      `${field('opsTopicArn')} is in region ${stage.opsTopicArn.split(':')[3]}; alarms notify a topic of their own region only, and this ` +
        `stage pins no environment. Set ${field('account')} and ${field('region')} to have synth check it.`,
    );
  }
  const key = stage.kmsKeyArn === undefined ? undefined : kmsKeyArnParts(stage.kmsKeyArn);
  if (key !== undefined) {
    annotations.addWarningV2(
      STAGE_WARNINGS.kmsKeyRegion,
      `${field('kmsKeyArn')} is in region ${key.region}; every resource the stack encrypts needs a key of its own region, and this ` +
        `stage pins no environment. Set ${field('account')} and ${field('region')} to have synth check it.`,
    );
  }
}
