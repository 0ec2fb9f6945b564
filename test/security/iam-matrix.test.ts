import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { renderIamMatrix, roleGrants, synthesizedTemplate, withIamMatrix, type RoleGrants } from '../../bin/iam-matrix';

/**
 * The IAM matrix of docs/security.md is the synthesized stack's, and the stack keeps the promises
 * the page makes about it: no wildcard action, `*` resources only for list operations AWS cannot
 * scope, the export bucket only for the export functions and only under `exports/`, each secret
 * and the token table only for the functions named there.
 */

const DOC = join(__dirname, '..', '..', 'docs', 'security.md');
const template = synthesizedTemplate();
const roles = roleGrants(template);
const functions = roles.filter((r) => r.isFunction);

/** Names of the functions holding `action` on a resource matching `resource`. */
function holders(action: RegExp, resource: RegExp = /./): string[] {
  return functions
    .filter((f) =>
      f.grants.some((g) => g.effect === 'Allow' && g.actions.some((a) => action.test(a)) && g.resources.some((r) => resource.test(r))),
    )
    .map((f) => f.name)
    .sort();
}

const allGrants = (list: RoleGrants[]) => list.flatMap((r) => r.grants.map((g) => ({ role: r.name, ...g })));

describe('the IAM matrix', () => {
  it('docs/security.md holds the matrix of the synthesized stack (regenerate: npm run iam-matrix)', () => {
    const committed = readFileSync(DOC, 'utf8');
    expect(withIamMatrix(committed, renderIamMatrix(template))).toBe(committed);
  });

  it('has a row for every function in functions/, and nothing but Allow statements', () => {
    const dirs = readdirSync(join(__dirname, '..', '..', 'functions')).filter((d) => !d.startsWith('_'));
    expect(functions.map((f) => f.name).sort()).toEqual(dirs.sort());
    expect(allGrants(roles).filter((g) => g.effect !== 'Allow')).toEqual([]);
  });

  it('grants no wildcard action, and "*" resources only for list operations that AWS cannot scope', () => {
    const grants = allGrants(roles);
    expect(grants.filter((g) => g.actions.some((a) => a === '*' || a.endsWith(':*')))).toEqual([]);
    const unscoped = grants.filter((g) => g.resources.includes('*')).flatMap((g) => g.actions);
    expect([...new Set(unscoped)].sort()).toEqual(['scheduler:ListSchedules', 'secretsmanager:ListSecrets']);
  });

  it('the export bucket: objects under exports/ only, written by export-period and read by it and check-monthly-export only', () => {
    expect(holders(/^s3:/)).toEqual(['check-monthly-export', 'export-period']);
    expect(holders(/^s3:(PutObject|DeleteObject|AbortMultipartUpload)$/)).toEqual(['export-period']);
    const objectGrants = allGrants(functions).filter((g) => g.actions.some((a) => a.startsWith('s3:') && a !== 's3:ListBucket'));
    for (const grant of objectGrants) for (const resource of grant.resources) expect(resource).toMatch(/^ExportsBucket\/exports\/\*$/);
    // ListBucket, the one bucket-level action, only with the prefix condition.
    const resources = template.Resources as Record<
      string,
      {
        Type: string;
        Properties: {
          PolicyDocument?: { Statement: { Action: string | string[]; Condition?: Record<string, Record<string, unknown>> }[] };
        };
      }
    >;
    const listStatements = Object.values(resources)
      .filter((r) => r.Type === 'AWS::IAM::Policy')
      .flatMap((r) => r.Properties.PolicyDocument!.Statement)
      .filter((s) => [s.Action].flat().includes('s3:ListBucket'));
    expect(listStatements.length).toBeGreaterThan(0);
    for (const statement of listStatements) expect(statement.Condition).toEqual({ StringLike: { 's3:prefix': ['exports/*'] } });
  });

  it('each secret is read only by the functions docs/security.md names', () => {
    expect(holders(/^secretsmanager:GetSecretValue$/, /^InstitutionCredential$/)).toEqual([
      'check-health',
      'onboard-user',
      'recover-user',
      'refresh-tokens',
      'revoke-user',
    ]);
    expect(holders(/^secretsmanager:GetSecretValue$/, /^ExportsWebhookSecret$/)).toEqual(['receive-export-webhook']);
    expect(holders(/^secretsmanager:GetSecretValue$/, /CompanySecret|imported-key/)).toEqual([
      'check-key-rotations',
      'export-period',
      'revoke-api-key',
      'rotate-api-key',
    ]);
    expect(holders(/^secretsmanager:PutSecretValue$/)).toEqual(['rotate-api-key']);
    // The webhook reads its own secret and nothing else of Secrets Manager.
    const webhook = functions.find((f) => f.name === 'receive-export-webhook')!;
    expect(webhook.grants.filter((g) => g.actions.some((a) => a.startsWith('secretsmanager:'))).flatMap((g) => g.resources)).toEqual([
      'ExportsWebhookSecret',
    ]);
  });

  it('user tokens are readable only by the token functions and the export worker; the planners see the keys-only index', () => {
    expect(holders(/^dynamodb:(GetItem|BatchGetItem|Query)$/, /^TokensTable$/)).toEqual([
      'export-period',
      'onboard-user',
      'recover-user',
      'refresh-tokens',
      'revoke-user',
    ]);
    expect(holders(/^dynamodb:/, /^TokensTable\/index\/due$/)).toEqual(['plan-monthly-export', 'plan-token-refresh']);
    expect(holders(/^dynamodb:(PutItem|UpdateItem|DeleteItem|BatchWriteItem)$/, /^TokensTable$/)).toEqual([
      'onboard-user',
      'recover-user',
      'refresh-tokens',
      'revoke-user',
    ]);
  });
});
