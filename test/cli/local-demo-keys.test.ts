import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cliEnv, onboardArgs, parseJson, useCliState, type CliState } from '../helpers/cli';
import { startSandbox } from '../../sandbox';
import { DEMO_INSTITUTION_SECRET, monthOf } from '../../sandbox/seed';
import { ManualClock } from '../../src/core/shared/clock';

/**
 * The local mode's sandbox is built from a fixed seed, which is in the repository. Its data may
 * follow from it (the demo is the same every time), its credentials must not: while a command runs
 * the sandbox listens on loopback, and anyone of the host who could compute a demo key could read
 * the demo data (decision 97 in docs/architecture.md). Every output of these suites is scanned for
 * the credentials their state directories hold (useCliState).
 */

interface SandboxFile {
  demo: {
    institution: { id: string; secret: string };
    companies: { publicId: string; apiKeys: { key: string }[] }[];
    users: { username: string; email: string; externalId: string }[];
  };
  institutions: { id: string; secret: string }[];
}
interface SecretsFile {
  secrets: { name: string; versions: { stages: string[]; value: { SecretString?: string } }[] }[];
}
interface ExportBody {
  companies: { companyId: string; status: string; manifestUrl: string }[];
}

/** Compared without a matcher's diff, which would print the credentials on a failure. */
const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

const readJson = async <T>(dir: string, file: string) => JSON.parse(await readFile(join(dir, file), 'utf8')) as T;

/** Each secret's current value, by name: the institution credential and the companies' key secrets. */
async function currentSecrets(dir: string): Promise<Record<string, string>> {
  const { secrets } = await readJson<SecretsFile>(dir, 'secrets.json');
  return Object.fromEntries(secrets.map((s) => [s.name, s.versions.find((v) => v.stages.includes('AWSCURRENT'))!.value.SecretString!]));
}

/** Every credential the state's sandbox was seeded with: the institution secret and the demo keys. */
async function demoCredentials(dir: string): Promise<string[]> {
  const { demo } = await readJson<SandboxFile>(dir, 'sandbox.json');
  return [demo.institution.secret, ...demo.companies.flatMap((c) => c.apiKeys.map((k) => k.key))];
}

/** What the export wrote for each company, by company: every object's SHA-256 and each dataset's records and totals. */
async function exported(body: ExportBody) {
  const out: Record<string, unknown> = {};
  for (const company of body.companies) {
    expect(company.status).toBe('completed');
    const manifest = JSON.parse(await readFile(fileURLToPath(company.manifestUrl), 'utf8')) as {
      datasets: Record<string, { records: number; totals: unknown }>;
      objects: { sha256: string }[];
    };
    out[company.companyId] = {
      objects: manifest.objects.map((o) => o.sha256),
      datasets: Object.fromEntries(Object.entries(manifest.datasets).map(([name, d]) => [name, { records: d.records, totals: d.totals }])),
    };
  }
  return out;
}

const exportJson = async (state: CliState, month: string) => {
  const result = await state.acctops('--json', 'export', '--month', month);
  expect(result.code).toBe(0);
  return { result, body: parseJson<ExportBody>(result) };
};

describe('acctops local mode: demo credentials of its own per state, the demo data of the seed', () => {
  const first = useCliState();
  const second = useCliState();
  const month = monthOf(Date.now(), -1);

  it('two new states get different API keys and institution secrets, none the seed gives, and the same data', async () => {
    const a = await exportJson(first, month);
    const b = await exportJson(second, month);
    for (const { result } of [a, b]) {
      expect(result.stderr).toMatch(/created the local state/);
      expect(result.stderr).not.toMatch(/made before the demo's credentials were random/);
    }

    const credentialsA = await demoCredentials(first.dir);
    const credentialsB = await demoCredentials(second.dir);
    expect(credentialsA).toHaveLength(7);
    expect(new Set([...credentialsA, ...credentialsB]).size).toBe(14);
    // What the secrets hold (what the commands use) differs too: every value of one state is absent from the other.
    const storedA = Object.values(await currentSecrets(first.dir));
    const storedB = Object.values(await currentSecrets(second.dir));
    expect(storedA).toHaveLength(4);
    // Counted, not listed: a failure must not print credentials.
    expect(storedA.filter((v) => storedB.includes(v)).length).toBe(0);

    // Neither is what the seed gives, which anyone can compute (the old local mode's credentials).
    const seeded = await startSandbox({ port: 0, seed: 1, clock: new ManualClock(Date.now()), seededCredentials: true, adminHttp: false });
    try {
      const fromSeed = [seeded.demo!.institution.secret, ...seeded.demo!.companies.flatMap((c) => c.apiKeys.map((k) => k.key))];
      expect(fromSeed[0] === DEMO_INSTITUTION_SECRET).toBe(true);
      expect([...credentialsA, ...credentialsB].filter((c) => fromSeed.includes(c)).length).toBe(0);
      // The data is the seed's all the same: the same companies as a sandbox of seed 1.
      const { demo } = await readJson<SandboxFile>(first.dir, 'sandbox.json');
      expect(demo.companies.map((c) => c.publicId)).toEqual(seeded.demo!.companies.map((c) => c.publicId));
    } finally {
      await seeded.stop();
    }

    const demoA = (await readJson<SandboxFile>(first.dir, 'sandbox.json')).demo;
    const demoB = (await readJson<SandboxFile>(second.dir, 'sandbox.json')).demo;
    expect(demoB.companies.map((c) => c.publicId)).toEqual(demoA.companies.map((c) => c.publicId));
    expect(demoB.users).toEqual(demoA.users);
    // Same records, same sums, byte for byte the same files.
    const filesA = await exported(a.body);
    expect(Object.keys(filesA)).toHaveLength(3);
    expect(await exported(b.body)).toEqual(filesA);
  });

  it('a later command uses the credentials the first one stored, and stores no new ones', async () => {
    const stored = await currentSecrets(first.dir);
    const seededWith = await demoCredentials(first.dir);
    const { demo } = await readJson<SandboxFile>(first.dir, 'sandbox.json');
    const alice = demo.users[0]!;

    // The institution credential: the service retrieves the user it knows.
    const onboarded = await first.acctops('--json', '--verbose', ...onboardArgs(alice));
    expect(onboarded.code).toBe(0);
    expect(parseJson(onboarded)).toMatchObject({ externalId: alice.externalId, result: 'retrieved', status: 'active' });
    const listed = await first.acctops('--json', 'users', 'list');
    expect(parseJson<{ users: { externalId: string }[] }>(listed).users.map((u) => u.externalId)).toEqual([alice.externalId]);
    // The company keys: another month's export of every company.
    const again = await exportJson(first, monthOf(Date.now(), -2));
    expect(again.body.companies).toHaveLength(3);

    expect(sameJson(await currentSecrets(first.dir), stored)).toBe(true);
    expect(sameJson(await demoCredentials(first.dir), seededWith)).toBe(true);
    // And they are this state's own: the other state's commands use none of them.
    const other = [...Object.values(await currentSecrets(second.dir)), ...(await demoCredentials(second.dir))];
    expect([...Object.values(stored), ...seededWith].filter((c) => other.includes(c)).length).toBe(0);
    for (const result of [onboarded, listed, again.result]) expect(result.stderr).not.toMatch(/created the local state/);
  });
});

/**
 * What the code before decision 97 gave every state, made of a new one: the fixed institution secret
 * in the service, in its record of the demo credentials, and in the stored credential.
 */
async function makeOld(dir: string): Promise<SandboxFile> {
  const sandbox = await readJson<SandboxFile & Record<string, unknown>>(dir, 'sandbox.json');
  sandbox.demo.institution.secret = DEMO_INSTITUTION_SECRET;
  for (const institution of sandbox.institutions) if (institution.id === 'inst_demo') institution.secret = DEMO_INSTITUTION_SECRET;
  await writeFile(join(dir, 'sandbox.json'), JSON.stringify(sandbox), { mode: 0o600 });
  const secrets = await readJson<SecretsFile & Record<string, unknown>>(dir, 'secrets.json');
  for (const version of secrets.secrets.find((s) => s.name === 'acctops/local/institution')!.versions)
    version.value.SecretString = `inst_demo:${DEMO_INSTITUTION_SECRET}`;
  await writeFile(join(dir, 'secrets.json'), JSON.stringify(secrets), { mode: 0o600 });
  return sandbox;
}

describe('acctops local mode: a state made when the demo credentials followed from the seed', () => {
  const state = useCliState();
  const NOTE = /^acctops: note: this local state was made before the demo's credentials were random: .*`acctops local reset --yes`/m;

  it("keeps working, and every command says in one line that its credentials are the seed's and how to end that", async () => {
    expect((await state.acctops('users', 'list')).code).toBe(0);
    const sandbox = await makeOld(state.dir);

    const alice = sandbox.demo.users[0]!;
    const onboarded = await state.acctops('--json', ...onboardArgs(alice));
    expect(onboarded.code).toBe(0);
    expect(parseJson(onboarded)).toMatchObject({ result: 'retrieved' });
    expect(onboarded.stderr.match(new RegExp(NOTE.source, 'gm'))).toHaveLength(1);
    const exportedOld = await exportJson(state, monthOf(Date.now(), -1));
    expect(exportedOld.body.companies.every((c) => c.status === 'completed')).toBe(true);
    expect(exportedOld.result.stderr).toMatch(NOTE);
    // The notice names the risk, never the secret.
    expect(exportedOld.result.stderr.includes(DEMO_INSTITUTION_SECRET)).toBe(false);
  });
});

describe('npm start on a state made when the demo credentials followed from the seed', () => {
  const state = useCliState();

  it("runs, and its header says once that the credentials are the seed's and how to start again", async () => {
    const { runDemo } = await import('../../cli/demo.ts');
    let printed = '';
    const io = { stdout: { write: (t: string) => (printed += t) }, stderr: { write: (t: string) => (printed += t) } };
    const run = () => runDemo({ stateDir: state.dir, reset: false, io, env: cliEnv() });
    expect((await run()).created).toBe(true);
    state.outputs.push({ code: 0, stdout: printed, stderr: '' });
    expect(printed).not.toMatch(/made before they were random/);
    await makeOld(state.dir);
    printed = '';
    const report = await run();
    state.outputs.push({ code: 0, stdout: printed, stderr: '' });
    expect(report.exports.companies.every((c) => c.status === 'completed')).toBe(true);
    expect(
      printed.match(/^ {2}keys {7}made before they were random: .*`npm start -- --reset` starts again with random ones$/gm),
    ).toHaveLength(1);
  });
});
