import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { parseStageSettings } from '../lib/config/stage';
import { AcctopsStack } from '../lib/stacks/acctops-stack';

// `npm run iam-matrix`: synthesizes the stack (no bundling, no AWS) and rewrites the IAM matrix in
// docs/security.md: one row per function (and per other role) with every action its role holds, on
// which resource, under which condition keys. test/security/iam-matrix.test.ts fails when the
// committed matrix differs from the synthesized one.

export const BEGIN = '<!-- iam-matrix:begin (generated from the synthesized template; npm run iam-matrix) -->';
export const END = '<!-- iam-matrix:end -->';

/** The stage the matrix is drawn for: two companies, one secret created by the stack and one imported. */
export const MATRIX_STAGE = {
  baseUrl: 'https://accounting.example.com/api/v1',
  companies: [
    { companyId: '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b' },
    {
      companyId: '0b7e4c9a-3f1d-4c2b-9a8e-5d6f7a8b9c0d',
      existingSecretArn: 'arn:aws:secretsmanager:eu-central-1:123456789012:secret:acctops/imported-key-AbCdEf',
    },
  ],
};

type Json = Record<string, unknown>;
interface Resource {
  Type: string;
  Properties?: Json;
}
interface Statement {
  Effect: string;
  Action: string | string[];
  Resource?: unknown;
  Condition?: Record<string, Record<string, unknown>>;
}

export function synthesizedTemplate(): Json {
  // Not CDK's own temporary outdir: CDK removes it on the process's `exit` event, which never comes
  // under jest (iam-matrix.test.ts calls this), so each run of the suite left one behind. The
  // template is read into memory, so the directory can go at once.
  const outdir = mkdtempSync(join(tmpdir(), 'acctops-matrix-cdk.out-'));
  try {
    const app = new App({ outdir, context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new AcctopsStack(app, 'acctops-matrix', {
      stage: { name: 'matrix', ...parseStageSettings(MATRIX_STAGE, 'stages.matrix') },
    });
    return Template.fromStack(stack).toJSON() as Json;
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

/** A logical id without CDK's 8-character hash: `TokensTableFC8D39D1` -> `TokensTable`. */
function shortId(id: string): string {
  return id.replace(/[0-9A-F]{8}$/, '');
}

/** An intrinsic as readable text: resources by their short id, pseudo parameters as `${...}`. */
function text(value: unknown, resources: Record<string, Resource>): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map((v) => text(v, resources)).join(', ');
  if (value && typeof value === 'object') {
    const v = value as Json;
    if ('Ref' in v) {
      const ref = String(v.Ref);
      return ref.startsWith('AWS::') ? `\${${ref.slice(5)}}` : shortId(ref);
    }
    if ('Fn::GetAtt' in v) {
      const [id, attribute] = v['Fn::GetAtt'] as [string, string];
      return attribute === 'Arn' ? shortId(id) : `${shortId(id)}.${attribute}`;
    }
    if ('Fn::Join' in v) {
      const [separator, parts] = v['Fn::Join'] as [string, unknown[]];
      return parts.map((p) => text(p, resources)).join(separator);
    }
    if ('Fn::Sub' in v) return String(Array.isArray(v['Fn::Sub']) ? v['Fn::Sub'][0] : v['Fn::Sub']);
    if ('Fn::Select' in v || 'Fn::Split' in v || 'Fn::ImportValue' in v) return JSON.stringify(v);
  }
  return JSON.stringify(value);
}

function list<T>(value: T | T[] | undefined): T[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

/** One IAM statement of a role, with its intrinsics resolved to readable text. */
export interface Grant {
  effect: string;
  actions: string[];
  resources: string[];
  /** Condition keys (their values are in the template). */
  conditions: string[];
}

/** Every statement a role holds: its attached policies, inline policies and managed policies. */
function grantsOf(roleId: string, resources: Record<string, Resource>): Grant[] {
  const statements: Statement[] = [];
  for (const resource of Object.values(resources)) {
    if (resource.Type !== 'AWS::IAM::Policy') continue;
    const roles = list(resource.Properties?.Roles as unknown[]).map((r) => (r as { Ref?: string }).Ref);
    if (roles.includes(roleId)) statements.push(...((resource.Properties?.PolicyDocument as { Statement: Statement[] }).Statement ?? []));
  }
  const role = resources[roleId]!;
  for (const policy of list(role.Properties?.Policies as { PolicyDocument: { Statement: Statement[] } }[]))
    statements.push(...policy.PolicyDocument.Statement);
  for (const managed of list(role.Properties?.ManagedPolicyArns as unknown[]))
    statements.push({ Effect: 'Allow', Action: `managed-policy:${text(managed, resources)}` });
  return statements.map((s) => ({
    effect: s.Effect,
    actions: [...new Set(list(s.Action))].sort(),
    resources: list(s.Resource)
      .map((r) => text(r, resources))
      .sort(),
    conditions: [...new Set(Object.values(s.Condition ?? {}).flatMap((c) => Object.keys(c)))].sort(),
  }));
}

export interface RoleGrants {
  /** The function's ACCTOPS_FUNCTION name, or the role's short id and principal. */
  name: string;
  isFunction: boolean;
  grants: Grant[];
}

/** Every role of the template with its grants: functions first (by name), then the other roles. */
export function roleGrants(template: Json): RoleGrants[] {
  const resources = template.Resources as Record<string, Resource>;
  const acctopsName = (r: Resource) =>
    (r.Properties?.Environment as { Variables?: Json } | undefined)?.Variables?.ACCTOPS_FUNCTION as string | undefined;
  // Functions CDK adds for itself (the registry's AwsCustomResource seeder) are listed with the other roles.
  const functions = Object.entries(resources)
    .filter(([, r]) => r.Type === 'AWS::Lambda::Function' && acctopsName(r) !== undefined)
    .map(([id, r]) => {
      const name = acctopsName(r) ?? shortId(id);
      const roleId = (r.Properties?.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
      return { name, roleId, isFunction: true };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
  const functionRoles = new Set(functions.map((f) => f.roleId));
  const others = Object.entries(resources)
    .filter(([id, r]) => r.Type === 'AWS::IAM::Role' && !functionRoles.has(id))
    .map(([id, r]) => {
      const principals = (
        (r.Properties?.AssumeRolePolicyDocument as { Statement: { Principal?: { Service?: unknown } }[] }).Statement ?? []
      ).flatMap((s) => list(s.Principal?.Service).map((p) => text(p, resources)));
      return {
        name: `${shortId(id)} (assumed by ${[...new Set(principals)].sort().join(', ') || 'another principal'})`,
        roleId: id,
        isFunction: false,
      };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
  return [...functions, ...others].map((r) => ({ name: r.name, isFunction: r.isFunction, grants: grantsOf(r.roleId, resources) }));
}

function line(grant: Grant): string {
  const effect = grant.effect === 'Allow' ? '' : `${grant.effect}: `;
  const on = grant.resources.length > 0 ? ` on ${grant.resources.join(', ')}` : '';
  const when = grant.conditions.length > 0 ? ` (if ${grant.conditions.join(', ')})` : '';
  return `${effect}${grant.actions.join(', ')}${on}${when}`;
}

function escape(value: string): string {
  return value.replace(/\|/g, '\\|').replace(/\*/g, '\\*');
}

/** The matrix as markdown, from a synthesized template. */
export function renderIamMatrix(template: Json): string {
  const roles = roleGrants(template);
  const row = (role: RoleGrants) => `| \`${role.name}\` | ${[...new Set(role.grants.map(line))].sort().map(escape).join('<br>')} |`;
  return [
    BEGIN,
    '',
    `Stage: ${MATRIX_STAGE.companies.length} companies (one secret created by the stack, one imported by ARN). Resources are logical ids without CDK's hash; \`\${Region}\`, \`\${AccountId}\` and \`\${Partition}\` are the stack's.`,
    '',
    '| Function | Actions (on resources, with condition keys) |',
    '|---|---|',
    ...roles.filter((r) => r.isFunction).map(row),
    '',
    '| Other role | Actions (on resources, with condition keys) |',
    '|---|---|',
    ...roles.filter((r) => !r.isFunction).map(row),
    '',
    END,
  ].join('\n');
}

/** `document` with its generated matrix replaced. */
export function withIamMatrix(document: string, matrix: string): string {
  const begin = document.indexOf(BEGIN);
  const end = document.indexOf(END);
  if (begin < 0 || end < begin) throw new Error('docs/security.md lacks the iam-matrix markers');
  return `${document.slice(0, begin)}${matrix}${document.slice(end + END.length)}`;
}

if (require.main === module) {
  const path = join(__dirname, '..', 'docs', 'security.md');
  writeFileSync(path, withIamMatrix(readFileSync(path, 'utf8'), renderIamMatrix(synthesizedTemplate())));
  console.log(`wrote the IAM matrix to ${path}`);
}
