import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import { AcctopsStack } from '../../lib/stacks/acctops-stack';
import { synthAcctopsStack, testApp, testStage } from '../helpers/cdk';
import { tempDirSync } from '../helpers/temp-dirs';

/**
 * AWS's own CloudFormation linter (cfn-lint) on the synthesized templates: an independent judge of
 * what CDK and our constructs emit, with the resource specifications and the IAM action lists of
 * every service. An action name no service has (`secretsmanager:DescribeSecrets`) passes cdk-nag,
 * the synth and every emulator, and is an AccessDenied on the first call in AWS; cfn-lint names it
 * (W3037). It is a Python tool that a fresh machine may not have: these tests run where
 * `cfn-lint` is on the PATH (this project's CI machine has it) and are reported skipped elsewhere,
 * so `npm test` does not need it. `ACCTOPS_REQUIRE_CFN_LINT=1` makes its absence a failure.
 */

/**
 * W3005 ("dependency already enforced by a GetAtt"): CDK gives every function a DependsOn on its
 * role's default policy and its role together, so that the policy exists before the first
 * invocation; the role's part is redundant with the Role GetAtt. Emitted by aws-cdk-lib, harmless.
 */
const IGNORED = ['W3005'];

interface Finding {
  Rule: { Id: string };
  Message: string;
  Location: { Path: (string | number)[] };
}

function cfnLintVersion(): string | undefined {
  const probe = spawnSync('cfn-lint', ['--version'], { encoding: 'utf8' });
  return probe.status === 0 ? probe.stdout.trim() : undefined;
}

const version = cfnLintVersion();
if (version === undefined && process.env.ACCTOPS_REQUIRE_CFN_LINT === '1') {
  throw new Error('ACCTOPS_REQUIRE_CFN_LINT=1 but cfn-lint is not on the PATH');
}
const withCfnLint = version === undefined ? describe.skip : describe;

function lint(template: unknown): Finding[] {
  const file = join(tempDirSync('acctops-cfn-lint-'), 'template.json');
  writeFileSync(file, JSON.stringify(template));
  const run = spawnSync('cfn-lint', ['--format', 'json', '--ignore-checks', ...IGNORED, '--', file], { encoding: 'utf8' });
  // cfn-lint exits with a bit mask of the levels it found (2 errors, 4 warnings, 8 informational);
  // 1 or anything without JSON is the tool itself failing.
  if (run.status === 1 || !run.stdout.trim().startsWith('[')) {
    throw new Error(`cfn-lint failed (exit ${run.status}): ${run.stderr.slice(0, 500)}`);
  }
  return JSON.parse(run.stdout) as Finding[];
}

const describeFindings = (findings: Finding[]) => findings.map((f) => `${f.Rule.Id} at ${f.Location.Path.join('/')}: ${f.Message}`);

withCfnLint(`cfn-lint ${version ?? ''} on the synthesized stack`, () => {
  // cfn-lint takes ~5 s a template.
  jest.setTimeout(60_000);

  it('finds nothing in a stage of defaults', () => {
    expect(describeFindings(lint(synthAcctopsStack().template.toJSON()))).toEqual([]);
  });

  // Every optional resource: companies (one with an imported key secret under its own KMS key), the stage's own KMS key,
  // alarm e-mails and an ops topic, data not retained.
  const everything = {
    alarmEmails: ['oncall@example.com'],
    opsTopicArn: 'arn:aws:sns:eu-central-1:123456789012:ops',
    kmsKeyArn: 'arn:aws:kms:eu-central-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab',
    retainData: false,
    logRetentionDays: 365,
    companies: [
      { companyId: 'c0ffee00-0000-4000-8000-000000000001', defaultCurrency: 'jpy' },
      {
        companyId: 'c0ffee00-0000-4000-8000-000000000002',
        existingSecretArn: 'arn:aws:secretsmanager:eu-central-1:123456789012:secret:acctops/imported-key-AbCdEf',
        existingSecretKmsKeyArn: 'arn:aws:kms:eu-central-1:123456789012:key/0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0',
      },
    ],
  };

  it('finds nothing in an environment-agnostic stage of every optional resource', () => {
    // The account is a token here: an output description built from it was a Fn::Join, which
    // CloudFormation refuses ("Every Description member must be a string", E6003).
    expect(describeFindings(lint(synthAcctopsStack(everything).template.toJSON()))).toEqual([]);
  });

  it('finds nothing in the same stage pinned to an account and region, as bin/app.ts deploys it', () => {
    const stage = testStage({ ...everything, account: '123456789012', region: 'eu-central-1' });
    const stack = new AcctopsStack(testApp(), 'acctops-test', { stage, env: { account: stage.account, region: stage.region } });
    expect(describeFindings(lint(Template.fromStack(stack).toJSON()))).toEqual([]);
  });

  it('names an IAM action that no service has, which every local peer would accept', () => {
    type Policy = { Type: string; Properties: { PolicyDocument: { Statement: unknown[] } } };
    const template = synthAcctopsStack().template.toJSON() as { Resources: Record<string, Policy> };
    const policy = Object.values(template.Resources).find((r) => r.Type === 'AWS::IAM::Policy')!;
    policy.Properties.PolicyDocument.Statement.push({ Effect: 'Allow', Action: 'secretsmanager:DescribeSecrets', Resource: '*' });
    const findings = lint(template);
    expect(findings.map((f) => f.Rule.Id)).toContain('W3037');
    expect(describeFindings(findings).join('\n')).toMatch(/describesecrets/i);
  });
});
