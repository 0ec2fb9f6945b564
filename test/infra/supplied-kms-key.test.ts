import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { loadStageConfig, StageConfigError } from '../../lib/config/stage';
import { STAGE_WARNINGS } from '../../lib/constructs/stage-checks';
import { KMS_VIA_SERVICES } from '../../lib/stacks/acctops-stack';
import { acknowledgements, describeViolations, nagViolations, synthAcctopsStack } from '../helpers/cdk';
import { tempDirSync } from '../helpers/temp-dirs';

/**
 * A stage that names its own KMS key (`kmsKeyArn`, decision 84): the stack creates no key, encrypts
 * what its own keys encrypted with that one, and grants each function the same KMS actions as
 * before, on that key's ARN.
 */

const ROOT = join(__dirname, '..', '..');
const KEY_ARN = 'arn:aws:kms:eu-central-1:210987654321:key/1234abcd-12ab-34cd-56ef-1234567890ab';
const PINNED = { account: '123456789012', region: 'eu-central-1', alarmEmails: ['oncall@example.com'] };

type Resource = { Type: string; Properties?: Record<string, unknown> };
type Statement = { Action: string | string[]; Resource: unknown; Condition?: Record<string, Record<string, unknown>> };

/** A property path into a resource's Properties; a number indexes an array. */
const at = (value: unknown, ...path: (string | number)[]): unknown =>
  path.reduce<unknown>(
    (node, step) => (node === null || typeof node !== 'object' ? undefined : (node as Record<string, unknown>)[step]),
    value,
  );

/** Where each encrypted resource type names its key. */
const KEY_PROPERTY: Record<string, (p: unknown) => unknown> = {
  'AWS::SecretsManager::Secret': (p) => at(p, 'KmsKeyId'),
  'AWS::DynamoDB::Table': (p) => at(p, 'SSESpecification', 'KMSMasterKeyId'),
  'AWS::SQS::Queue': (p) => at(p, 'KmsMasterKeyId'),
  'AWS::SNS::Topic': (p) => at(p, 'KmsMasterKeyId'),
  'AWS::S3::Bucket': (p) =>
    at(p, 'BucketEncryption', 'ServerSideEncryptionConfiguration', 0, 'ServerSideEncryptionByDefault', 'KMSMasterKeyID'),
};

/** Logical id → the key reference of every resource encrypted with a customer-managed key. */
function encrypted(resources: Record<string, Resource>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(resources).flatMap(([id, r]) => {
      const key = KEY_PROPERTY[r.Type]?.(r.Properties ?? {});
      return key === undefined ? [] : [[id, key]];
    }),
  );
}

/** Policy logical id → its statements that grant kms actions. */
function kmsStatements(resources: Record<string, Resource>): Record<string, Statement[]> {
  return Object.fromEntries(
    Object.entries(resources)
      .filter(([, r]) => r.Type === 'AWS::IAM::Policy')
      .map(([id, r]): [string, Statement[]] => [
        id,
        ((r.Properties!.PolicyDocument as { Statement: Statement[] }).Statement ?? []).filter((s) =>
          [s.Action].flat().some((a) => a.startsWith('kms:')),
        ),
      ])
      .filter(([, statements]) => statements.length > 0),
  );
}

/** JSON with every object's keys sorted: statements compare by content, not by key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

const isKeyRef = (value: unknown, keyIds: Set<string>): boolean => {
  const getAtt = (value as { 'Fn::GetAtt'?: [string, string] } | undefined)?.['Fn::GetAtt'];
  return getAtt !== undefined && keyIds.has(getAtt[0]) && getAtt[1] === 'Arn';
};

describe('a stage with its own KMS key (kmsKeyArn)', () => {
  const own = synthAcctopsStack(PINNED);
  const supplied = synthAcctopsStack({ ...PINNED, kmsKeyArn: KEY_ARN });
  const ownResources = own.template.toJSON().Resources as Record<string, Resource>;
  const resources = supplied.template.toJSON().Resources as Record<string, Resource>;
  const ownKeyIds = new Set(Object.keys(own.template.findResources('AWS::KMS::Key')));

  it('creates no KMS key and no alias', () => {
    expect(ownKeyIds.size).toBeGreaterThan(0);
    supplied.template.resourceCountIs('AWS::KMS::Key', 0);
    supplied.template.resourceCountIs('AWS::KMS::Alias', 0);
  });

  it("encrypts with the supplied key exactly what the stack's own keys encrypt", () => {
    const before = encrypted(ownResources);
    // The failed-invocations queue (SSE-SQS) and the access-log bucket (SSE-S3) stay as they are.
    expect(Object.keys(before).length).toBeGreaterThanOrEqual(12);
    for (const ref of Object.values(before)) expect(isKeyRef(ref, ownKeyIds)).toBe(true);
    const after = encrypted(resources);
    expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort());
    for (const [id, ref] of Object.entries(after)) expect([id, ref]).toEqual([id, KEY_ARN]);
  });

  it('names no other key anywhere in the template', () => {
    const text = JSON.stringify(supplied.template.toJSON());
    expect(text).not.toMatch(/AWS::KMS::|"kms:\*"/);
    for (const id of ownKeyIds) expect(text).not.toContain(`"${id}"`);
  });

  it('grants every role the same KMS actions and conditions as with its own keys, on the supplied key only', () => {
    const before = kmsStatements(ownResources);
    const after = kmsStatements(resources);
    expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort());
    for (const [policy, statements] of Object.entries(before)) {
      const expected = statements.map((s) => {
        expect(isKeyRef(s.Resource, ownKeyIds)).toBe(true);
        // Every grant names a service, the SQS poller's Decrypt (consumeQueue) included.
        expect(s.Condition).toBeDefined();
        return { ...s, Resource: KEY_ARN };
      });
      // One key where there were several: grants that differed only in their key become one.
      const distinct = (list: Statement[]) => [...new Set(list.map((s) => canonical(s)))].sort();
      expect([policy, distinct(after[policy]!)]).toEqual([policy, distinct(expected)]);
    }
  });

  it('holds every KMS grant to a service (kms:ViaService) and to the actions a function uses', () => {
    const grants = Object.values(kmsStatements(resources)).flat();
    expect(grants.length).toBeGreaterThan(20);
    for (const s of grants) {
      expect(s.Resource).toBe(KEY_ARN);
      for (const action of [s.Action].flat()) expect(['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey']).toContain(action);
      const via = JSON.stringify(s.Condition?.StringEquals?.['kms:ViaService']);
      expect(KMS_VIA_SERVICES.some((service) => via?.includes(`"${service}."`))).toBe(true);
    }
  });

  it('lists in KMS_VIA_SERVICES (output KmsKeyViaServices) every service a grant goes through, and no other', () => {
    const used = new Set(
      Object.values(kmsStatements(resources))
        .flat()
        .map((s) => /"([a-z0-9]+)\./.exec(JSON.stringify(s.Condition!.StringEquals!['kms:ViaService']))![1]),
    );
    // SNS has no grant: only CloudWatch publishes to the alarm topic, under the key owner's statement.
    expect([...used, 'sns'].sort()).toEqual([...KMS_VIA_SERVICES].sort());
    supplied.template.hasOutput('KmsKeyViaServices', {
      Value: {
        'Fn::Join': [
          '',
          KMS_VIA_SERVICES.flatMap((s, i) => [`${i === 0 ? '' : '.amazonaws.com,'}${s}.`, { Ref: 'AWS::Region' }]).concat([
            '.amazonaws.com',
          ]),
        ],
      },
    });
    supplied.template.hasOutput('SecretsKeyArn', { Value: KEY_ARN });
    expect(own.template.findOutputs('KmsKeyViaServices')).toEqual({});
  });

  it('describes every output with a literal string, which is all CloudFormation accepts', () => {
    // synthAcctopsStack gives the stack no environment (as bin/app.ts does for a stage that names no
    // account), so its account is a token: a description built from it was a Fn::Join, refused.
    const outputs = Object.entries(supplied.template.toJSON().Outputs as Record<string, { Description?: unknown }>);
    expect(outputs.filter(([, o]) => typeof o.Description !== 'string').map(([id]) => id)).toEqual([]);
    expect(String(supplied.template.toJSON().Outputs.KmsKeyViaServices.Description)).toContain(KEY_ARN);
  });

  it('passes cdk-nag AwsSolutions with the same acknowledgements as the default stack', () => {
    expect(describeViolations(nagViolations(supplied.app))).toEqual([]);
    const ids = (app: typeof own.app) =>
      acknowledgements(app)
        .map((a) => a.id)
        .sort();
    expect(ids(supplied.app)).toEqual(ids(own.app));
  });

  it("documents, for the key's owner, every service principal the stack's own key policies admit", () => {
    const principals = new Set(
      Object.values(own.template.findResources('AWS::KMS::Key')).flatMap((key) =>
        (key.Properties.KeyPolicy.Statement as { Principal: { Service?: string } }[]).flatMap((s) =>
          s.Principal.Service === undefined ? [] : [s.Principal.Service],
        ),
      ),
    );
    expect([...principals].sort()).toEqual(['cloudwatch.amazonaws.com', 'events.amazonaws.com']);
    const doc = readFileSync(join(ROOT, 'docs', 'infrastructure.md'), 'utf8');
    const section = doc.slice(doc.indexOf('### Bring your own key'), doc.indexOf('### Outputs'));
    expect(section.length).toBeGreaterThan(500);
    for (const principal of principals) expect(section).toContain(principal);
    for (const service of KMS_VIA_SERVICES) expect(section).toContain(`"${service}.`);
    for (const action of ['kms:Decrypt', 'kms:Encrypt', 'kms:GenerateDataKey*', 'kms:ReEncrypt*', 'kms:CreateGrant', 'kms:DescribeKey'])
      expect(section).toContain(action);
  });

  it('warns, without a pinned environment, that the key must be in the region the stack deploys to', () => {
    const { stack } = synthAcctopsStack({ kmsKeyArn: KEY_ARN, alarmEmails: ['oncall@example.com'] });
    const warnings = Annotations.fromStack(stack)
      .findWarning('*', Match.anyValue())
      .map((w) => String(w.entry.data));
    expect(warnings).toEqual([
      expect.stringMatching(new RegExp(`stages\\.test\\.kmsKeyArn is in region eu-central-1.*${STAGE_WARNINGS.kmsKeyRegion}`)),
    ]);
    expect(
      Annotations.fromStack(supplied.stack)
        .findWarning('*', Match.anyValue())
        .map((w) => String(w.entry.data)),
    ).toEqual([]);
  });
});

describe('kmsKeyArn through the CDK context, as `cdk synth` reads it', () => {
  const load = (kmsKeyArn: unknown, extra: Record<string, unknown> = {}) => {
    const context: Record<string, unknown> = {
      stage: 'prod',
      stages: { prod: { baseUrl: 'https://accounting.example.com/api/v1', kmsKeyArn, ...extra } },
    };
    return loadStageConfig((key) => context[key]);
  };
  const failure = (run: () => unknown): StageConfigError => {
    try {
      run();
    } catch (error) {
      if (error instanceof StageConfigError) return error;
      throw error;
    }
    throw new Error('expected a StageConfigError');
  };

  it.each([
    ['a multi-Region key', 'arn:aws:kms:eu-central-1:210987654321:key/mrk-0123456789abcdef0123456789abcdef'],
    ['a key of another partition', 'arn:aws-us-gov:kms:us-gov-west-1:210987654321:key/1234abcd-12ab-34cd-56ef-1234567890ab'],
    ['a key of another account', KEY_ARN],
  ])('takes %s', (_what, arn) => {
    expect(load(arn).kmsKeyArn).toBe(arn);
  });

  it.each([
    ['a key id alone', '1234abcd-12ab-34cd-56ef-1234567890ab', 'expected a KMS key ARN'],
    ['an alias name', 'alias/acctops', 'expected a KMS key ARN'],
    ['an alias ARN', 'arn:aws:kms:eu-central-1:210987654321:alias/acctops', 'an alias ARN'],
    ['another service', 'arn:aws:sns:eu-central-1:210987654321:key/1234abcd-12ab-34cd-56ef-1234567890ab', 'not sns'],
    ['a bad region', 'arn:aws:kms:europe:210987654321:key/1234abcd-12ab-34cd-56ef-1234567890ab', 'region'],
    ['a bad account', 'arn:aws:kms:eu-central-1:2109:key/1234abcd-12ab-34cd-56ef-1234567890ab', '12-digit account'],
    ['a key id that is no UUID', 'arn:aws:kms:eu-central-1:210987654321:key/acctops', 'key/<key id>'],
    ['a number', 42, 'expected string'],
  ])('refuses %s, naming stages.<stage>.kmsKeyArn and what is wrong', (_what, arn, why) => {
    const error = failure(() => load(arn));
    expect(error.issues).toEqual([{ path: 'stages.prod.kmsKeyArn', message: expect.stringContaining(why) }]);
    expect(error.message).toContain('stages.prod.kmsKeyArn: ');
  });

  it('refuses a key outside the pinned region: the services encrypt with a key of their own region only', () => {
    const error = failure(() => load(KEY_ARN, { account: '123456789012', region: 'eu-west-1' }));
    expect(error.issues).toEqual([{ path: 'stages.prod.kmsKeyArn', message: expect.stringContaining('is in region eu-central-1') }]);
    expect(load(KEY_ARN, { account: '123456789012', region: 'eu-central-1' }).kmsKeyArn).toBe(KEY_ARN);
  });

  /** bin/app.ts, run as `cdk synth` runs it: context in CDK_CONTEXT_JSON, the assembly into CDK_OUTDIR. */
  const synthApp = (kmsKeyArn: string) => {
    const outdir = tempDirSync('acctops-kms-synth-');
    const context = {
      stage: 'prod',
      stages: { prod: { baseUrl: 'https://accounting.example.com/api/v1', alarmEmails: ['oncall@example.com'], kmsKeyArn } },
      // No esbuild: the template is what this test reads.
      'aws:cdk:bundling-stacks': [],
    };
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'bin/app.ts'], {
      cwd: ROOT,
      env: { ...process.env, CDK_CONTEXT_JSON: JSON.stringify(context), CDK_OUTDIR: outdir },
      encoding: 'utf8',
    });
    return { ...run, outdir };
  };

  it('fails the synth on a bad ARN, naming the setting', () => {
    const run = synthApp('arn:aws:kms:eu-central-1:210987654321:alias/acctops');
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('stages.prod.kmsKeyArn: an alias ARN');
  });

  it('synthesizes a good one offline, with cdk-nag, into a template without a KMS key', () => {
    const run = synthApp(KEY_ARN);
    expect([run.status, run.stderr]).toEqual([0, expect.any(String)]);
    const template = JSON.parse(readFileSync(join(run.outdir, 'acctops-prod.template.json'), 'utf8')) as {
      Resources: Record<string, Resource>;
    };
    const types = Object.values(template.Resources).map((r) => r.Type);
    expect(types).toContain('AWS::SecretsManager::Secret');
    expect(types.filter((t) => t.startsWith('AWS::KMS::'))).toEqual([]);
    expect(Object.values(encrypted(template.Resources)).every((ref) => ref === KEY_ARN)).toBe(true);
  });
});
