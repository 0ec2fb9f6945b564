// The module object itself (a namespace import would be a frozen copy that cannot be spied on).
import childProcess from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { AcctopsStack } from '../../lib/stacks/acctops-stack';
import { testStage } from '../helpers/cdk';

// The one infra test that really bundles (the others skip esbuild): it proves that a function is
// built by the local esbuild without Docker, that @aws-sdk stays out of the bundle, and that the
// bundle runs.

interface Metafile {
  inputs: Record<string, unknown>;
  outputs: Record<string, { entryPoint?: string; imports: { path: string; external?: boolean }[] }>;
}

const ROOT = path.resolve(__dirname, '..', '..');

describe('bundling check-health', () => {
  let outdir: string;
  let assetDir: string;
  let spawned: string[];

  beforeAll(() => {
    // Inside the project, so that the bundle's require('@aws-sdk/...') resolves to node_modules.
    mkdirSync(path.join(ROOT, 'cdk.out'), { recursive: true });
    outdir = mkdtempSync(path.join(ROOT, 'cdk.out', 'bundling-test-'));
    const spawnSync = jest.spyOn(childProcess, 'spawnSync');
    try {
      const app = new App({ outdir });
      new AcctopsStack(app, 'acctops-test', { stage: testStage() });
      app.synth();
      spawned = spawnSync.mock.calls.map(([command, args]) => [command, ...(args ?? [])].join(' '));
    } finally {
      spawnSync.mockRestore();
    }
    // The stack bundles every function; check-health's asset is the one its Code names.
    const template = JSON.parse(readFileSync(path.join(outdir, 'acctops-test.template.json'), 'utf8')) as {
      Resources: Record<
        string,
        { Type: string; Properties: { Environment?: { Variables?: Record<string, unknown> }; Code?: { S3Key?: string } } }
      >;
    };
    const fn = Object.values(template.Resources).find(
      (r) => r.Type === 'AWS::Lambda::Function' && r.Properties.Environment?.Variables?.ACCTOPS_FUNCTION === 'check-health',
    );
    const asset = `asset.${String(fn?.Properties.Code?.S3Key).replace(/\.zip$/, '')}`;
    expect(readdirSync(outdir)).toContain(asset);
    assetDir = path.join(outdir, asset);
  });

  afterAll(() => {
    if (outdir) rmSync(outdir, { recursive: true, force: true });
  });

  it('runs the local esbuild and never Docker', () => {
    expect(spawned.some((command) => /esbuild/.test(command))).toBe(true);
    expect(spawned.filter((command) => /^docker\b/.test(command))).toEqual([]);
  });

  it('writes the bundle, its source map and its metafile', () => {
    for (const file of ['index.js', 'index.js.map', 'index.meta.json']) expect(existsSync(path.join(assetDir, file))).toBe(true);
    expect(readFileSync(path.join(assetDir, 'index.js'), 'utf8')).toMatch(/\/\/# sourceMappingURL=index\.js\.map\s*$/);
  });

  it('bundles our code and its dependencies but leaves @aws-sdk to the runtime', () => {
    const meta = JSON.parse(readFileSync(path.join(assetDir, 'index.meta.json'), 'utf8')) as Metafile;
    const inputs = Object.keys(meta.inputs);
    expect(inputs.filter((input) => input.includes('node_modules/@aws-sdk/'))).toEqual([]);
    expect(inputs).toEqual(expect.arrayContaining([expect.stringMatching(/functions\/check-health\/handler\.ts$/)]));
    expect(inputs.some((input) => input.includes('node_modules/@middy/core/'))).toBe(true);

    const entry = Object.values(meta.outputs).find((output) => output.entryPoint);
    const sdkImports = entry!.imports.filter((i) => i.path.startsWith('@aws-sdk/'));
    expect(sdkImports.map((i) => i.path)).toContain('@aws-sdk/client-secrets-manager');
    for (const i of sdkImports) expect(i.external).toBe(true);
  });

  it('loads, and a malformed event is refused with a ValidationError naming the field (names survive minifying)', () => {
    const script = `
      const { handler } = require(${JSON.stringify(path.join(assetDir, 'index.js'))});
      const context = { awsRequestId: 'req-1' };
      handler({ probes: ['everything'] }, context).then(
        () => console.log(JSON.stringify({ ok: true })),
        (error) => console.log(JSON.stringify({ name: error.name, field: error.field })),
      );`;
    const out = childProcess.execFileSync(process.execPath, ['-e', script], {
      cwd: ROOT,
      encoding: 'utf8',
      env: {
        PATH: process.env.PATH,
        ACCTOPS_STAGE: 'test',
        ACCTOPS_FUNCTION: 'check-health',
        LOG_LEVEL: 'error',
        INSTITUTION_SECRET_ARN: 'arn:aws:secretsmanager:eu-central-1:123456789012:secret:acctops-AbCdEf',
        ACCTOPS_BASE_URL: 'https://accounting.example.com/api/v1',
        AWS_REGION: 'eu-central-1',
      },
    });
    const lines = out.trim().split('\n');
    expect(JSON.parse(lines[lines.length - 1]!)).toEqual({ name: 'ValidationError', field: 'probes[0]' });
  });
});
