import { Template } from 'aws-cdk-lib/assertions';
import { parseStageSettings } from '../../lib/config/stage';
import { AcctopsStack } from '../../lib/stacks/acctops-stack';
import { testApp } from '../helpers/cdk';

/**
 * Two stages in one account and region, each with the same company: no statement of any role of
 * stage A's stack may let it read stage B's company key secret. Judged from the synthesized
 * templates by the policy alone: a statement reaches B's secret if it allows reading secrets and a
 * resource of it can name B's secret's ARN, unless its condition requires A's stage tag.
 */
const ACCOUNT = '111111111111';
const REGION = 'eu-central-1';
const COMPANY = '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b';
const READS = ['secretsmanager:GetSecretValue', 'secretsmanager:*', '*'];

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
interface Statement {
  Effect: string;
  Action: string | string[];
  Resource?: Json;
  Condition?: Record<string, Record<string, Json>>;
}

function stackFor(app: ReturnType<typeof testApp>, stage: string): AcctopsStack {
  const settings = parseStageSettings(
    { baseUrl: 'https://accounting.example.com/api/v1', account: ACCOUNT, region: REGION, companies: [{ companyId: COMPANY }] },
    `stages.${stage}`,
  );
  return new AcctopsStack(app, `acctops-${stage}`, { stage: { name: stage, ...settings }, env: { account: ACCOUNT, region: REGION } });
}

/** Every identity-policy statement of the template: AWS::IAM::Policy and roles' inline policies. */
function statementsOf(template: Template): { where: string; statement: Statement }[] {
  const resources = template.toJSON().Resources as Record<string, { Type: string; Properties?: Record<string, Json> }>;
  const out: { where: string; statement: Statement }[] = [];
  for (const [id, r] of Object.entries(resources)) {
    const documents: Json[] = [];
    if (r.Type === 'AWS::IAM::Policy' || r.Type === 'AWS::IAM::ManagedPolicy') documents.push(r.Properties?.PolicyDocument ?? null);
    if (r.Type === 'AWS::IAM::Role')
      for (const p of (r.Properties?.Policies as { PolicyDocument: Json }[] | undefined) ?? []) documents.push(p.PolicyDocument);
    for (const doc of documents) {
      for (const statement of (doc as { Statement?: Statement[] } | null)?.Statement ?? []) out.push({ where: id, statement });
    }
  }
  return out;
}

/**
 * A resource as the ARNs it can stand for, rendered with pseudo parameters; a Ref or GetAtt of
 * one of the stack's own resources becomes `<own:Id>`, which can never be another stack's secret.
 */
function render(value: Json): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    if ('Ref' in value) {
      const ref = value.Ref as string;
      return ref === 'AWS::Partition' ? 'aws' : ref === 'AWS::Region' ? REGION : ref === 'AWS::AccountId' ? ACCOUNT : `<own:${ref}>`;
    }
    if ('Fn::GetAtt' in value) return `<own:${(value['Fn::GetAtt'] as string[])[0]}>`;
    if ('Fn::Join' in value) {
      const [sep, parts] = value['Fn::Join'] as [string, Json[]];
      return parts.map(render).join(sep);
    }
  }
  return `<unknown:${JSON.stringify(value)}>`;
}

const glob = (pattern: string) =>
  new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  );

function reaches(statement: Statement, arn: string, stageTag: string): boolean {
  if (statement.Effect !== 'Allow') return false;
  if (![statement.Action].flat().some((a) => READS.includes(a))) return false;
  const resources = [statement.Resource ?? []].flat().map(render);
  if (!resources.some((r) => glob(r).test(arn))) return false;
  // A condition that requires a stage tag other than the secret's denies it.
  const required = statement.Condition?.StringEquals?.['aws:ResourceTag/acctops:stage'];
  return required === undefined || [required].flat().includes(stageTag);
}

describe('stage isolation by policy (synthesized templates)', () => {
  const app = testApp();
  // Both stacks exist before the first synthesis (one app, as `cdk synth` of two stages would be).
  const stacks = [stackFor(app, 'alpha'), stackFor(app, 'beta')];
  const [alpha, beta] = stacks.map((stack) => Template.fromStack(stack)) as [Template, Template];
  const secretArn = (stage: string) =>
    `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:acctops/${stage}/company/${COMPANY}/api-key-AbCdEf`;

  it('both stages create a secret for the company, tagged with their stage', () => {
    for (const [template, stage] of [
      [alpha, 'alpha'],
      [beta, 'beta'],
    ] as const) {
      template.hasResourceProperties('AWS::SecretsManager::Secret', {
        Name: `acctops/${stage}/company/${COMPANY}/api-key`,
        Tags: [
          { Key: 'acctops:company', Value: COMPANY },
          { Key: 'acctops:purpose', Value: 'company-api-key' },
          { Key: 'acctops:stage', Value: stage },
        ],
      });
    }
  });

  it("no role of stage alpha may read stage beta's company secret, nor beta alpha's", () => {
    const leaks = (template: Template, other: string) =>
      statementsOf(template)
        .filter(({ statement }) => reaches(statement, secretArn(other), other))
        .map(({ where, statement }) => `${where}: ${JSON.stringify(statement)}`);
    expect(leaks(alpha, 'beta')).toEqual([]);
    expect(leaks(beta, 'alpha')).toEqual([]);
  });

  it('the judge is not vacuous: a wildcard read without a stage condition would be caught, and alpha does read its own secret', () => {
    const wildcard: Statement = {
      Effect: 'Allow',
      Action: 'secretsmanager:GetSecretValue',
      Resource: `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:acctops/*`,
    };
    expect(reaches(wildcard, secretArn('beta'), 'beta')).toBe(true);
    expect(
      reaches({ ...wildcard, Condition: { StringEquals: { 'aws:ResourceTag/acctops:stage': 'alpha' } } }, secretArn('beta'), 'beta'),
    ).toBe(false);
    // Alpha's functions reach alpha's company secrets by tag, a run-time one (not in cdk.json) included.
    const runTime = `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:acctops/alpha/company/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d/api-key-XyZ123`;
    const readersOfOwn = statementsOf(alpha).filter(({ statement }) => reaches(statement, runTime, 'alpha'));
    expect(readersOfOwn.length).toBeGreaterThan(0);
    // ...through statements that require alpha's stage tag, not through the ARN alone.
    for (const { statement } of readersOfOwn) expect(statement.Condition?.StringEquals?.['aws:ResourceTag/acctops:stage']).toBe('alpha');
  });
});
