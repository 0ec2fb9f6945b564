import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { AcctopsFunction } from '../../lib/constructs/acctops-function';
import { lambdaNodeStart } from '../lib/lambda-node';
import { OUT_DIR, ROOT, runNodeJson } from '../lib/processes';
import { table, type SectionReport, type TargetResult } from '../lib/report';
import {
  BENCH_ACCOUNT as ACCOUNT,
  BENCH_REGION as REGION,
  benchStage,
  functionsOf,
  synthBenchStack,
  type Template,
  type TemplateResource,
} from '../lib/stack';
import { kb, max, median, min } from '../lib/stats';

const FUNCTIONS_DIR = path.join(ROOT, 'functions');
const CDK_OUT = path.join(OUT_DIR, 'cold-start');

export interface BundledFunction {
  handlerDir: string;
  /** Whether AcctopsStack deploys it; only then is its environment known. */
  inStack: boolean;
  assetDir: string;
  bundleBytes: number;
  /** Input files by bytes in the bundle, biggest first. */
  modules: { path: string; bytes: number }[];
  /** The function's environment with every CloudFormation reference replaced by a dummy of its shape. */
  environment: Record<string, string>;
  /** Its MemorySize: the runtime derives node's heap flags from it. */
  memoryMb: number;
  /** The `@aws-sdk/*` packages the bundle leaves to the runtime, from the metafile. */
  externals: string[];
}

interface Metafile {
  outputs: Record<
    string,
    {
      entryPoint?: string;
      bytes: number;
      inputs: Record<string, { bytesInOutput: number }>;
      imports?: { path: string; external?: boolean }[];
    }
  >;
}

/** Every `functions/<dir>/handler.ts`. */
export function handlerDirs(): string[] {
  return readdirSync(FUNCTIONS_DIR)
    .filter((dir) => !dir.startsWith('_') && existsSync(path.join(FUNCTIONS_DIR, dir, 'handler.ts')))
    .sort();
}

/**
 * Bundles every function by synthesizing the real AcctopsStack with bundling on: the bundles are
 * made by AcctopsFunction itself, so the esbuild options are the construct's by construction (one
 * source of truth, and lib/ imports nothing from here). A handler the stack does not deploy yet is
 * bundled by a bare AcctopsFunction in a second stack of the same app.
 */
export function bundleFunctions(): BundledFunction[] {
  rmSync(CDK_OUT, { recursive: true, force: true });
  // Inside the project, so that a bundle's require('@aws-sdk/...') resolves to node_modules, as the
  // Lambda runtime's own SDK would.
  const template = synthBenchStack(CDK_OUT, true);
  const deployed = deployedAssets(CDK_OUT, template);
  const missing = handlerDirs().filter((dir) => !deployed.has(dir));
  const standalone = new Map<string, string>();
  if (missing.length > 0) {
    const app2 = new App({ outdir: path.join(CDK_OUT, 'not-in-stack') });
    const stack = new Stack(app2, 'acctops-bench-unwired', { env: { account: ACCOUNT, region: REGION } });
    for (const dir of missing) new AcctopsFunction(stack, dir, { handlerDir: dir, description: dir, stageName: benchStage().name });
    const unwired = app2.synth().getStackByName('acctops-bench-unwired').template as Template;
    for (const [handlerDir, resource] of functionsOf(unwired)) {
      const key = resource.Properties?.Code?.S3Key;
      if (key) standalone.set(handlerDir, path.join(CDK_OUT, 'not-in-stack', `asset.${key.replace(/\.zip$/, '')}`));
    }
  }

  return handlerDirs().map((handlerDir): BundledFunction => {
    const wired = deployed.get(handlerDir);
    const assetDir = wired?.assetDir ?? standalone.get(handlerDir);
    if (!assetDir) throw new Error(`no bundle for functions/${handlerDir}`);
    return describeBundle(handlerDir, assetDir, wired);
  });
}

type DeployedAsset = { assetDir: string; environment: Record<string, string>; memoryMb: number };

/** Each deployed function's asset directory in `cdkOut`, its environment (references as dummies) and memory. */
function deployedAssets(cdkOut: string, template: Template): Map<string, DeployedAsset> {
  const deployed = new Map<string, DeployedAsset>();
  for (const [handlerDir, resource] of functionsOf(template)) {
    const variables = resource.Properties?.Environment?.Variables ?? {};
    const key = resource.Properties?.Code?.S3Key;
    if (typeof key !== 'string') continue;
    const environment = Object.fromEntries(Object.entries(variables).map(([name, value]) => [name, dummyValue(value, template.Resources)]));
    const memory = resource.Properties?.MemorySize;
    deployed.set(handlerDir, {
      assetDir: path.join(cdkOut, `asset.${key.replace(/\.zip$/, '')}`),
      environment,
      memoryMb: typeof memory === 'number' ? memory : DEFAULT_MEMORY_MB,
    });
  }
  return deployed;
}

/**
 * The deployed functions of a bench stack synthesized earlier with bundling on, perhaps by another
 * commit (bench/cold-start/ab-init.ts): `cdkOut` holds its template and its asset directories.
 */
export function deployedFunctions(cdkOut: string): BundledFunction[] {
  const file = readdirSync(cdkOut).find((f) => f.endsWith('.template.json') && !f.includes('unwired'));
  if (!file) throw new Error(`${cdkOut}: no synthesized template`);
  const template = JSON.parse(readFileSync(path.join(cdkOut, file), 'utf8')) as Template;
  return [...deployedAssets(cdkOut, template)].map(([handlerDir, asset]) => describeBundle(handlerDir, asset.assetDir, asset));
}

/** A bundle's size, composition and SDK packages from its directory (index.js and index.meta.json). */
function describeBundle(handlerDir: string, assetDir: string, wired: DeployedAsset | undefined): BundledFunction {
  const meta = JSON.parse(readFileSync(path.join(assetDir, 'index.meta.json'), 'utf8')) as Metafile;
  const output = Object.values(meta.outputs).find((o) => o.entryPoint !== undefined);
  if (!output) throw new Error(`${handlerDir}: the metafile names no entry point`);
  const modules = Object.entries(output.inputs)
    .map(([file, input]) => ({ path: file, bytes: input.bytesInOutput }))
    .sort((a, b) => b.bytes - a.bytes);
  return {
    handlerDir,
    inStack: wired !== undefined,
    assetDir,
    // The file Lambda loads; the metafile's `bytes` is the same number.
    bundleBytes: statSync(path.join(assetDir, 'index.js')).size,
    modules,
    environment: wired?.environment ?? {},
    memoryMb: wired?.memoryMb ?? DEFAULT_MEMORY_MB,
    externals: [...new Set((output.imports ?? []).filter((i) => i.external && i.path.startsWith('@aws-sdk/')).map((i) => i.path))].sort(),
  };
}

/**
 * A value of the right shape for a CloudFormation reference, so that the handler's `readEnv`
 * accepts it: a queue's Ref is its URL, a secret's Ref and any `Arn` attribute an ARN, other Refs
 * a name. Nothing is contacted at init, so dummies are enough.
 */
function dummyValue(value: unknown, resources: Record<string, TemplateResource>): string {
  if (typeof value === 'string') return value;
  const ref = (value as { Ref?: string }).Ref;
  const getAtt = (value as { 'Fn::GetAtt'?: [string, string] })['Fn::GetAtt'];
  const id = ref ?? getAtt?.[0];
  if (id === undefined) throw new Error(`cannot stand in for ${JSON.stringify(value)}`);
  const type = resources[id]?.Type ?? 'AWS::Unknown::Resource';
  const service = type.split('::')[1]!.toLowerCase();
  const name = id.toLowerCase();
  const arn = `arn:aws:${service}:${REGION}:${ACCOUNT}:${type.split('::')[2]!.toLowerCase()}/${name}`;
  if (getAtt) return getAtt[1] === 'QueueUrl' ? `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/${name}` : arn;
  switch (type) {
    case 'AWS::SQS::Queue':
      return `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/${name}`;
    case 'AWS::SecretsManager::Secret':
      return `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:${name}-AbCdEf`;
    case 'AWS::SNS::Topic':
    case 'AWS::Lambda::Function':
    case 'AWS::IAM::Role':
      return arn;
    default:
      return name;
  }
}

/** What the Lambda runtime sets in every function's environment (credentials are dummies). */
function lambdaEnvironment(fn: BundledFunction): Record<string, string> {
  return {
    AWS_REGION: REGION,
    AWS_DEFAULT_REGION: REGION,
    AWS_ACCESS_KEY_ID: 'AKIABENCHCOLDSTART00',
    AWS_SECRET_ACCESS_KEY: 'bench-cold-start-not-a-secret',
    AWS_SESSION_TOKEN: 'bench-cold-start-not-a-token',
    AWS_LAMBDA_FUNCTION_NAME: `acctops-bench-${fn.handlerDir}`,
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(fn.memoryMb),
    AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
    AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
    LAMBDA_TASK_ROOT: fn.assetDir,
    TZ: ':UTC',
  };
}

/**
 * Measures the module init of one bundle: `require()` of index.js in a fresh `node`, timed inside
 * that process (Node's own start-up is not the function's), as the Lambda Node.js runtime loads a
 * CommonJS handler: its UserFunction.js `require()`s `index.js` when no package.json up the tree
 * says `"type": "module"` (aws-lambda-nodejs-runtime-interface-client, `_tryRequire`), and an
 * AcctopsFunction asset has none. Until 2026-11-25 this probe used `import()`, which adds Node's
 * ESM loader and a cjs-module-lexer pass over the bundle that Lambda never runs. The environment is
 * the template's, including NODE_OPTIONS=--enable-source-maps, which makes Node read the source
 * map at load.
 */
const INIT_PROBE = `
for (const m of JSON.parse(process.argv[2] || '[]')) require(m);
const cpu = process.cpuUsage();
const started = performance.now();
let m;
try {
  m = require(process.argv[1]);
} catch (error) {
  process.stdout.write(JSON.stringify({ error: String((error && (error.name + ': ' + error.message)) || error).slice(0, 400) }) + '\\n');
  process.exit(0);
}
const ms = performance.now() - started;
const used = process.cpuUsage(cpu);
const handler = m.handler ?? (m.default && m.default.handler);
process.stdout.write(JSON.stringify({ ms, cpuMs: (used.user + used.system) / 1000, handler: typeof handler === 'function' }) + '\\n');`;

/**
 * Node's modules the Lambda Node.js runtime has loaded when it `require()`s the handler, so that a
 * function's init does not pay for them: its index.mjs loads RAPIDClient.js (`http`),
 * ResponseStream.js (`net`), Errors.js and LogPatch.js (`util`, `fs`), UserFunction.js (`path`,
 * `fs`) and InvokeContext.js (`assert`) first (aws-lambda-nodejs-runtime-interface-client, src/).
 * The probes load them before their clock starts. Until 2026-11-26 they did not, and every init
 * here included compiling those internals.
 */
export const RUNTIME_MODULES: readonly string[] = ['http', 'net', 'util', 'fs', 'path', 'assert'];

/** `require()` of the packages a bundle leaves to the runtime, alone: the part of its init that is the SDK's. */
const SDK_PROBE = `
for (const m of JSON.parse(process.argv[2] || '[]')) require(m);
const modules = JSON.parse(process.argv[1]);
const started = performance.now();
for (const m of modules) require(m);
process.stdout.write(JSON.stringify({ ms: performance.now() - started }) + '\\n');`;

/** Median of `runs` fresh processes that only require `fn`'s external packages, with its flags and environment. */
export async function measureSdkFloor(fn: BundledFunction, runs: number): Promise<number | null> {
  if (fn.externals.length === 0) return 0;
  const env = { ...lambdaEnvironment(fn), ...fn.environment };
  const start = lambdaNodeStart(fn.memoryMb, env.NODE_OPTIONS);
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const r = await runNodeJson<{ ms?: number }>(
      [...start.args, '-e', SDK_PROBE, JSON.stringify(fn.externals), JSON.stringify(RUNTIME_MODULES)],
      {
        env: cleanEnv(env),
        cwd: fn.assetDir,
        timeoutMs: 60_000,
      },
    );
    if (r.ms === undefined) return null;
    times.push(r.ms);
  }
  return median(times);
}

export interface InitResult {
  /** Milliseconds per run; empty when the module failed to load. */
  runs: number[];
  medianMs: number | null;
  /** CPU time of the same imports (user + system): less sensitive than wall time to a busy machine. */
  medianCpuMs: number | null;
  error?: string;
}

export async function measureInit(
  fn: BundledFunction,
  runs: number,
  runtimeModules: readonly string[] = RUNTIME_MODULES,
): Promise<InitResult> {
  const env = { ...lambdaEnvironment(fn), ...fn.environment };
  // node's flags as the runtime's bootstrap passes them: --expose-gc, and the heap flags for the
  // function's memory unless its NODE_OPTIONS set them (the export function's do).
  const start = lambdaNodeStart(fn.memoryMb, env.NODE_OPTIONS);
  const times: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < runs; i++) {
    const result = await runNodeJson<{ ms?: number; cpuMs?: number; handler?: boolean; error?: string }>(
      [...start.args, '-e', INIT_PROBE, path.join(fn.assetDir, 'index.js'), JSON.stringify(runtimeModules)],
      {
        env: cleanEnv(env),
        cwd: fn.assetDir,
        timeoutMs: 60_000,
      },
    );
    if (result.error !== undefined || result.ms === undefined)
      return { runs: times, medianMs: null, medianCpuMs: null, error: result.error ?? 'no timing' };
    if (!result.handler) return { runs: times, medianMs: null, medianCpuMs: null, error: 'the module exports no `handler` function' };
    times.push(result.ms);
    cpu.push(result.cpuMs ?? result.ms);
  }
  return { runs: times, medianMs: median(times), medianCpuMs: median(cpu) };
}

/** The function's environment alone, plus PATH: nothing of the benchmark's own shell leaks in. */
function cleanEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env };
}

/** AcctopsFunction's default memory, for a function the stack does not deploy. */
const DEFAULT_MEMORY_MB = 256;
/** Issue 17's bound ("today's 280 KB"); until 2026-11-26 the benchmark judged 300 KB. */
export const BUNDLE_LIMIT_BYTES = 280_000;
export const INIT_LIMIT_MS = 150;

function shortPath(file: string): string {
  return file.replace(/^node_modules\//, '');
}

/** `require()` of an empty module in the same kind of fresh process: how slow this machine is right now. */
export async function referenceInit(runs: number): Promise<number> {
  const empty: BundledFunction = {
    handlerDir: 'reference',
    inStack: false,
    assetDir: OUT_DIR,
    bundleBytes: 0,
    modules: [],
    environment: {},
    memoryMb: DEFAULT_MEMORY_MB,
    externals: [],
  };
  const file = path.join(OUT_DIR, 'empty-module.js');
  writeFileSync(file, 'exports.handler = async () => undefined;\n');
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const r = await runNodeJson<{ ms: number }>(
      [...lambdaNodeStart(empty.memoryMb, undefined).args, '-e', INIT_PROBE, file, JSON.stringify(RUNTIME_MODULES)],
      {
        env: cleanEnv(lambdaEnvironment(empty)),
        cwd: OUT_DIR,
      },
    );
    times.push(r.ms);
  }
  return median(times);
}

export async function runColdStartSection(options: { initRuns: number }): Promise<SectionReport> {
  const started = performance.now();
  const functions = bundleFunctions();
  const bundledS = (performance.now() - started) / 1000;
  const reference = await referenceInit(options.initRuns);
  const rows: (string | number)[][] = [];
  const inits = new Map<string, InitResult>();
  for (const fn of functions) {
    const init = fn.inStack ? await measureInit(fn, options.initRuns) : undefined;
    if (init) inits.set(fn.handlerDir, init);
    const sdk = fn.inStack ? await measureSdkFloor(fn, options.initRuns) : null;
    const top = fn.modules
      .slice(0, 3)
      .map((m) => `${shortPath(m.path)} (${kb(m.bytes)})`)
      .join(', ');
    const initText = !fn.inStack
      ? 'n/a: not in the stack yet'
      : init!.medianMs === null
        ? `failed: ${init!.error}`
        : `${init!.medianMs.toFixed(1)} (${min(init!.runs).toFixed(0)}–${max(init!.runs).toFixed(0)})`;
    const cpuText = init?.medianCpuMs == null ? '' : init.medianCpuMs.toFixed(1);
    const sdkText = sdk === null ? '' : `${sdk.toFixed(1)} (${fn.externals.map((e) => e.replace(/^@aws-sdk\/(client-)?/, '')).join(', ')})`;
    rows.push([fn.handlerDir, kb(fn.bundleBytes), initText, cpuText, sdkText, top]);
  }

  const biggest = functions.reduce((a, b) => (b.bundleBytes > a.bundleBytes ? b : a));
  const measured = [...inits.entries()];
  const failed = measured.filter(([, r]) => r.medianMs === null);
  const slowest = measured.filter(([, r]) => r.medianMs !== null).sort((a, b) => b[1].medianMs! - a[1].medianMs!)[0];
  const notInStack = functions.filter((f) => !f.inStack).map((f) => f.handlerDir);

  const targets: TargetResult[] = [
    {
      id: 'cold-start.bundle',
      what: `Bundle size, largest of ${functions.length} functions`,
      bound: '<= 280 KB',
      measured: `${kb(biggest.bundleBytes)} KB (${biggest.handlerDir})`,
      pass: functions.every((f) => f.bundleBytes <= BUNDLE_LIMIT_BYTES),
    },
    {
      id: 'cold-start.init',
      what: `Module init, median of ${options.initRuns}, slowest of ${measured.length} deployed functions`,
      bound: '<= 150 ms',
      measured:
        failed.length > 0
          ? `not measured: ${failed.map(([name, r]) => `${name} failed to load (${r.error})`).join('; ')}`
          : slowest
            ? `${slowest[1].medianMs!.toFixed(1)} ms (${slowest[0]})`
            : 'not measured: no function in the stack',
      pass: failed.length === 0 && slowest !== undefined && measured.every(([, r]) => r.medianMs! <= INIT_LIMIT_MS),
    },
  ];

  const markdown = [
    `Every \`functions/*/handler.ts\`, bundled by synthesizing the real \`AcctopsStack\` with bundling on (${bundledS.toFixed(0)} s):`,
    'the bundles are made by `AcctopsFunction` itself, so esbuild runs with exactly the options the deployment uses',
    '(CJS, minified without `keepNames`, source map without sources, `@aws-sdk/*` external, target node24). Sizes are',
    '`index.js` in KB of 1,000 bytes; the three biggest modules come from the metafile (`bytesInOutput`).',
    '',
    `Init: \`require()\` of the bundle in a fresh \`node\`, as the Lambda runtime loads a CommonJS handler, timed inside that process (Node's own start-up excluded,`,
    'and so are the Node modules the runtime has loaded before it requires the handler: http, net, util, fs, path, assert; `RUNTIME_MODULES`), median of',
    `${options.initRuns} runs, min–max in brackets; the CPU time of the same imports is beside it (on a busy machine the wall time\nwaits for a core, the CPU time does not). The process gets the function's environment from the synthesized template`,
    '(references replaced by dummies of the right shape, so `readEnv` passes; nothing is stubbed), the variables Lambda sets',
    "(region, memory, dummy credentials) and the template's `NODE_OPTIONS` (`--enable-source-maps`; the export function's also",
    "caps its heap). node starts with the flags the runtime's bootstrap adds: `--expose-gc` and the heap flags for the function's",
    'memory, unless its `NODE_OPTIONS` set them (bench/lib/lambda-node.ts). Heap flags cost module init ~10-20 ms here (export-period:',
    '~138 ms without, ~153 ms with, whichever semi-space), since a smaller old space is collected earlier. Until 2026-11-21 this',
    'benchmark started plain `node`, so earlier figures were ~10-20 ms too low; until 2026-11-26 the probes loaded none of the',
    "runtime's modules first, so earlier figures are 2-9% higher (docs/benchmark-history.md). `@aws-sdk/*` loads from",
    'node_modules, as it would from the runtime. Functions the stack does not deploy yet have no environment to start with:',
    `their bundles are measured, their init is not (${notInStack.length > 0 ? notInStack.join(', ') : 'none now'}).`,
    '',
    `Reference on this machine during this run: \`require()\` of an empty module takes ${reference.toFixed(2)} ms (median of ${options.initRuns}).`,
    '',
    "The `@aws-sdk/*` column is `require()` of only the packages the bundle leaves to the runtime, in a fresh process with the runtime's modules loaded and",
    "the same flags and environment: the share of the function's init that the SDK takes, which no change to our code",
    'moves (bundling the SDK instead would trade it for bundle bytes above the bound).',
    '',
    table(
      [
        'Function',
        'Bundle (KB)',
        'Init ms, median (min–max)',
        'Init CPU ms, median',
        'Of which `@aws-sdk/*` ms, median (the packages)',
        'Three biggest modules (KB)',
      ],
      rows,
    ),
    '',
    'How the bundles and their init got here, with the measurements behind each change (Powertools, one root per',
    "function, zod pinned and its locales dropped, lazy schemas, the SDK's rare paths on first use, no `keepNames`):",
    '[docs/benchmark-history.md](docs/benchmark-history.md#cold-start-issue-17).',
    '',
    'Module init is mostly loading: compiling the bundle and the `@aws-sdk/*` clients it requires (about a third of a',
    "profile of refresh-tokens), Node's own lazily loaded internals (http, crypto), and GC. Until 2026-11-25 the probe",
    "used `import()`, which starts Node's ESM loader and runs cjs-module-lexer over the whole bundle to find its exports;",
    "Lambda's runtime `require()`s a CommonJS handler and does neither, so earlier figures were high by that much (on",
    '2026-11-25: `import()` of an empty module 30.0 ms against 1.5 ms for `require()` on the same machine).',
  ].join('\n');

  return {
    title: 'Cold start',
    command: 'npm run bench -- --only cold-start',
    markdown,
    targets,
    misses: {
      'cold-start.bundle':
        "Cause: see the biggest modules of that bundle. A bundle near 530 KB still imports `{ z }` from zod somewhere (run `npx eslint src functions`); switch that file to `import * as z from 'zod'`. A bundle ~22 KB bigger than the table above has a zod newer than 4.4.3 (decision 41 in docs/architecture.md). An export bundle carrying another function's adapters has them on `AwsExportRuntime` instead of its own root (docs/conventions.md).",
      'cold-start.init':
        "Cause: module init is loading code, and most of it is the SDK's. The `@aws-sdk/*` column is `require()` of only the clients each function uses, before any code of ours runs: 110-183 ms on this machine in the 2026-11-26 12:58Z run (110-203 ms at 10:59Z, 94-218 ms at 08:13Z), and in five functions above the bound by itself. The empty-module reference shows the machine's speed: the bound passed once, on 2026-11-25 at 02:03Z (export-period 146.7 ms), on a faster hour of this machine. A profile of refresh-tokens' init (2026-11-26, 278-310 ms, self time): compiling the bundle's and the SDK's modules 67 ms; Node compiling the internals the SDK requires (http, https, http2, crypto, streams) 49 ms; the bundle's own code at load 40 ms, mostly zod schemas; the SDK's code 28 ms; GC 19 ms; resolving the SDK's files 15 ms; the source map 10 ms. Done: one composition root per function, each loading only its SDK clients (decision 41); zod's locales out of every bundle; module-level zod schemas built on first use except the client's (decision 43); the SDK clients of rare paths loaded on first use; no `keepNames`. Measured and not kept: the SDK bundled into each function (export-period's init 0.93 of before, at 928 KB against the 280 KB bound). Left: the SDK as a tree-shaken file of its own beside each bundle, without a source map (the SDK alone loads in ~60% of the time that way): a build step of our own and a change of decision 9. Dated measurements: docs/benchmark-history.md.",
    },
  };
}
