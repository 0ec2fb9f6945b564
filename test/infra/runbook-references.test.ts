import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { acknowledgements, synthAcctopsStack } from '../helpers/cdk';

/**
 * Alarm, secret, function and output descriptions, and cdk-nag acknowledgement reasons, send
 * operators to runbooks by their heading in docs/runbooks.md: `runbook "<heading>"` (or
 * `Runbook: "<heading>"`). Every mention of a runbook must be such a reference, and every
 * reference must name a heading that exists, so that renaming or dropping a runbook fails here.
 * The CLI's hints name them as `docs/runbooks.md, "<heading>"`.
 */

const ROOT = join(__dirname, '..', '..');
const HEADINGS = new Set(
  readFileSync(join(ROOT, 'docs', 'runbooks.md'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('## '))
    .map((line) => line.slice(3).trim()),
);

const MENTION = /\brunbooks?\b/gi;
const REFERENCE = /\brunbook:?\s*"([^"]+)"/gi;

interface Text {
  where: string;
  text: string;
}

/** The headings the texts name, each with where it was named. */
function references(texts: readonly Text[]): { where: string; heading: string }[] {
  return texts.flatMap(({ where, text }) => [...text.matchAll(REFERENCE)].map((m) => ({ where, heading: m[1]! })));
}

/** Texts that mention a runbook without naming it. */
function vagueMentions(texts: readonly Text[]): string[] {
  return texts
    .filter(({ text }) => (text.match(MENTION) ?? []).length !== [...text.matchAll(REFERENCE)].length)
    .map(({ where, text }) => `${where}: ${text}`);
}

describe('runbook references', () => {
  // A company, so that the stack creates a company key secret.
  const { app, template } = synthAcctopsStack({ companies: [{ companyId: '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b' }] });
  const resources = template.toJSON().Resources as Record<string, { Type: string; Properties?: Record<string, unknown> }>;
  const outputs = template.toJSON().Outputs as Record<string, { Description?: string }>;
  const texts: Text[] = [
    ...Object.entries(resources).flatMap(([id, r]) =>
      (['AlarmDescription', 'Description'] as const)
        .map((key) => r.Properties?.[key])
        .filter((text): text is string => typeof text === 'string')
        .map((text) => ({ where: `${r.Type} ${id}`, text })),
    ),
    ...Object.entries(outputs).flatMap(([key, o]) =>
      o.Description === undefined ? [] : [{ where: `output ${key}`, text: o.Description }],
    ),
    ...acknowledgements(app).map((a) => ({ where: `acknowledgement ${a.id} at ${a.path}`, text: a.reason })),
  ];

  it('every alarm and secret description, output and acknowledgement that mentions a runbook names an existing heading of docs/runbooks.md', () => {
    const found = references(texts);
    expect(found.filter((r) => !HEADINGS.has(r.heading))).toEqual([]);
    expect(vagueMentions(texts)).toEqual([]);
    // Not vacuous: the alarms and the secrets that need a runbook do name one.
    const named = (type: string) => new Set(found.filter((r) => r.where.startsWith(`${type} `)).map((r) => r.heading));
    expect([...named('AWS::SecretsManager::Secret')].sort()).toEqual([
      'Change the export webhook secret',
      'Change the institution secret',
      'Install a company API key',
    ]);
    expect([...named('AWS::CloudWatch::Alarm')].sort()).toEqual([
      'A failed invocation',
      'A key rotation failed',
      'Athena shows an older export than the manifest',
      'Change the export webhook secret',
      'Change the institution secret',
      'Recover a user',
      'The monthly export failed for one company',
      'The rotation doctor reports findings',
    ]);
  });

  it('the checks find what they look for', () => {
    const bad = [
      { where: 'a', text: 'Runbook: "Rotate a key now".' },
      { where: 'b', text: 'set it with the runbook' },
      { where: 'c', text: 'runbook "rotate a key now"' },
    ];
    expect(references(bad).filter((r) => !HEADINGS.has(r.heading))).toEqual([{ where: 'c', heading: 'rotate a key now' }]);
    expect(vagueMentions(bad)).toEqual(['b: set it with the runbook']);
  });

  it("the CLI's hints name existing runbooks", () => {
    const files = readdirSync(join(ROOT, 'cli'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    const hinted = files.flatMap((file) =>
      [...readFileSync(join(ROOT, 'cli', file), 'utf8').matchAll(/runbooks\.md, "([^"]+)"/g)].map((m) => ({ file, heading: m[1]! })),
    );
    expect(hinted.length).toBeGreaterThan(0);
    expect(hinted.filter((h) => !HEADINGS.has(h.heading))).toEqual([]);
  });
});
