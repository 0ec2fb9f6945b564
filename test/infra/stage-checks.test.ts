import { CfnWaitConditionHandle, Stack } from 'aws-cdk-lib';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import cdkJson from '../../cdk.json';
import { loadStageConfig, type StageConfig } from '../../lib/config/stage';
import { STAGE_WARNINGS, warnAboutStage } from '../../lib/constructs/stage-checks';
import { synthAcctopsStack, testApp, testStage } from '../helpers/cdk';

const OPS_TOPIC = 'arn:aws:sns:eu-central-1:210987654321:org-ops';
const IMPORTED = 'arn:aws:secretsmanager:eu-central-1:123456789012:secret:acme/api-key-AbCdEf';
const COMPANY = '0b7e4c9a-3f1d-4c2b-9a8e-5d6f7a8b9c0d';

/** The warnings warnAboutStage adds to an empty stack, as text. */
function warnings(stage: StageConfig): string[] {
  const stack = new Stack(testApp(), 'checks');
  // A template needs a resource, or synth adds a validation warning of its own.
  new CfnWaitConditionHandle(stack, 'Placeholder');
  warnAboutStage(stack, stage);
  return Annotations.fromStack(stack)
    .findWarning('*', Match.anyValue())
    .map((w) => String(w.entry.data));
}

describe('stage warnings at synth', () => {
  it("warns that a stage keeping data has no alarm destination, naming both settings: cdk.json's production", () => {
    const context: Record<string, unknown> = { ...cdkJson.context, stage: 'production' };
    const production = loadStageConfig((key) => context[key]);
    expect(warnings(production)).toEqual([
      expect.stringMatching(
        new RegExp(
          `stages\\.production\\.alarmEmails is empty and stages\\.production\\.opsTopicArn is not set.*${STAGE_WARNINGS.noAlarmDestination}`,
        ),
      ),
    ]);
  });

  it('does not warn a stage with an e-mail, an ops topic, or without retained data (a throw-away stage)', () => {
    expect(warnings(testStage({ alarmEmails: ['oncall@example.com'] }))).toEqual([]);
    expect(warnings(testStage({ opsTopicArn: OPS_TOPIC, account: '123456789012', region: 'eu-central-1' }))).toEqual([]);
    expect(warnings(testStage({ retainData: false }))).toEqual([]);
  });

  it('warns of an imported secret and an ops topic whose account and region a stage without an environment cannot check', () => {
    const stage = testStage({
      alarmEmails: ['oncall@example.com'],
      opsTopicArn: OPS_TOPIC,
      companies: [{ companyId: COMPANY }, { companyId: COMPANY.replace(/^0/, '1'), existingSecretArn: IMPORTED }],
    });
    const keyWarning = expect.stringContaining('stages.test.companies[1].existingSecretArn is imported without');
    expect(warnings(stage)).toEqual([
      keyWarning,
      expect.stringContaining('stages.test.companies[1].existingSecretArn is in account 123456789012, region eu-central-1'),
      expect.stringContaining('stages.test.opsTopicArn is in region eu-central-1'),
    ]);
    expect(warnings({ ...stage, account: '123456789012', region: 'eu-central-1' })).toEqual([keyWarning]);
  });
});

describe("an imported secret's KMS key at synth", () => {
  const KEY_ARN = 'arn:aws:kms:eu-central-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab';
  const imported = (extra: Record<string, unknown> = {}) =>
    synthAcctopsStack({
      alarmEmails: ['oncall@example.com'],
      account: '123456789012',
      region: 'eu-central-1',
      companies: [{ companyId: COMPANY }, { companyId: COMPANY.replace(/^0/, '1'), existingSecretArn: IMPORTED, ...extra }],
    });
  const keyWarnings = (stack: Stack) =>
    Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp(STAGE_WARNINGS.importedSecretKmsKey));

  it('warns, for the imported company only, that a customer managed key must be named or rotation fails with AccessDenied from KMS', () => {
    const { stack } = imported();
    Annotations.fromStack(stack).hasWarning(
      '*',
      Match.stringLikeRegexp(
        'stages\\.test\\.companies\\[1\\]\\.existingSecretArn is imported without stages\\.test\\.companies\\[1\\]\\.existingSecretKmsKeyArn: ' +
          'if the secret is encrypted with a customer managed KMS key, set .* else its rotation fails with AccessDenied from KMS\\. ' +
          "With the AWS managed key aws/secretsmanager nothing is needed; set .* to 'aws/secretsmanager' to say so",
      ),
    );
    expect(keyWarnings(stack)).toHaveLength(1);
  });

  it("does not warn when the key's ARN is given, or 'aws/secretsmanager' says it is the AWS managed key", () => {
    expect(keyWarnings(imported({ existingSecretKmsKeyArn: KEY_ARN }).stack)).toEqual([]);
    expect(keyWarnings(imported({ existingSecretKmsKeyArn: 'aws/secretsmanager' }).stack)).toEqual([]);
  });

  it("refuses any other alias, naming the field and the 'aws/secretsmanager' spelling", () => {
    expect(() => imported({ existingSecretKmsKeyArn: 'alias/aws/secretsmanager' })).toThrow(
      /stages\.test\.companies\[1\]\.existingSecretKmsKeyArn: expected a KMS key ARN.*or 'aws\/secretsmanager' for a secret under the AWS managed key/,
    );
  });
});

describe('the ops topic', () => {
  const { stack, template } = synthAcctopsStack({ opsTopicArn: OPS_TOPIC });
  const own = { Ref: stack.getLogicalId(stack.alarmTopic.node.defaultChild as never) };

  it('is notified by every alarm of the stack, when it fires and when it clears, next to the own topic', () => {
    const alarms = Object.entries(template.findResources('AWS::CloudWatch::Alarm'));
    expect(alarms.length).toBeGreaterThanOrEqual(28);
    const miswired = alarms
      .filter(([, a]) => {
        const p = a.Properties as Record<string, unknown>;
        const expected = JSON.stringify([own, OPS_TOPIC].map((t) => JSON.stringify(t)).sort());
        const sorted = (actions: unknown) => JSON.stringify(((actions as unknown[]) ?? []).map((t) => JSON.stringify(t)).sort());
        return sorted(p.AlarmActions) !== expected || sorted(p.OKActions) !== expected;
      })
      .map(([id]) => id);
    expect(miswired).toEqual([]);
  });

  it('is the stack warning its region cannot be checked (the stack calls warnAboutStage)', () => {
    Annotations.fromStack(stack).hasWarning('*', Match.stringLikeRegexp('stages\\.test\\.opsTopicArn is in region eu-central-1'));
  });
});
