import { Annotations, type Stack } from 'aws-cdk-lib';
import { kmsKeyArnParts, secretArnParts, type StageConfig } from '../config/stage';

/** Warning ids (`Annotations.acknowledgeWarning` takes them), one per kind of stage setting. */
export const STAGE_WARNINGS = {
  noAlarmDestination: 'acctops:stage.noAlarmDestination',
  importedSecretEnvironment: 'acctops:stage.importedSecretEnvironment',
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
