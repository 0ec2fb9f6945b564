import { createServer, type Server } from 'node:http';
import { startSandbox, type RunningSandbox } from '../../sandbox';
import { canaryApiKey, expectNoCanaries, trackSecret } from '../helpers/canary';
import { runAcctops, tempStateDir, type CliResult } from '../helpers/cli';
import { closeServer, listenOnLoopback } from '../helpers/loopback';

/**
 * `acctops export --base-url` when the service's error fields other than its message hold a key
 * (docs/security.md: the service may not make us print a secret it echoes). The sandbox's fault
 * injection puts one in a DRF `code`; a server of our own puts one of another service's shape in the
 * `X-Request-Id` header and in an envelope's `type`, `code` and `permission`. The CLI's line, text
 * and --json, names the refusal without the key. The echoed keys are none the CLI holds.
 */

const MONTH = '2026-10';
const ECHOED = canaryApiKey('cli-service-error-fields');
const OTHER_SHAPE = 'sk_live_Q7pXz9LmN2vB4kR8tY1wE6uI3oA5';

describe('acctops export: a key in the service error fields is not printed', () => {
  let sandbox: RunningSandbox;
  let foreign: Server;
  let foreignBase: string;
  let out: { dir: string; remove(): Promise<void> };
  let key: string;

  beforeAll(async () => {
    trackSecret(ECHOED);
    trackSecret(OTHER_SHAPE);
    sandbox = await startSandbox({ port: 0 });
    key = sandbox.demo!.companies[0]!.apiKeys[0]!.key;
    trackSecret(key);
    foreign = createServer((req, res) => {
      req.resume();
      res.writeHead(403, { 'content-type': 'application/json', 'x-request-id': OTHER_SHAPE });
      res.end(JSON.stringify({ error: { type: OTHER_SHAPE, code: OTHER_SHAPE, message: 'no', permission: OTHER_SHAPE } }));
    });
    foreignBase = `${await listenOnLoopback(foreign)}/api/v1`;
    out = await tempStateDir();
  });
  afterAll(async () => {
    await sandbox.stop();
    await closeServer(foreign);
    await out.remove();
  });

  async function exportFrom(baseUrl: string, json: boolean): Promise<CliResult> {
    return runAcctops([...(json ? ['--json'] : []), 'export', '--base-url', baseUrl, '--month', MONTH, '--out', 'files'], {
      env: { ACCTOPS_API_KEY: key },
      cwd: out.dir,
    });
  }

  function expectNoKey(result: CliResult): void {
    const printed = `${result.stdout}\n${result.stderr}`;
    for (const echoed of [ECHOED, OTHER_SHAPE]) expect(printed).not.toContain(echoed.slice(echoed.indexOf('_') + 1 + 8));
    expectNoCanaries(printed, 'acctops export output');
  }

  it('a 400 whose DRF code is a key (the sandbox fault): text and --json', async () => {
    await sandbox.admin.faults.add({
      route: 'GET /companies/',
      times: 'always',
      fault: { type: 'status', status: 400, json: { detail: 'x', code: ECHOED } },
    });
    try {
      const text = await exportFrom(sandbox.baseUrl, false);
      expect(text.code).toBe(1);
      expect(text.stderr).toMatch(/request refused as invalid \(400, \[REDACTED\], on GET \/api\/v1\/companies\//);
      expectNoKey(text);

      const json = await exportFrom(sandbox.baseUrl, true);
      expect(json.code).toBe(1);
      const line = json.stderr.trim().split('\n').pop()!;
      expect((JSON.parse(line) as { error: { message: string } }).error.message).toMatch(/\(400, \[REDACTED\], on GET /);
      expectNoKey(json);
    } finally {
      await sandbox.admin.faults.clear();
    }
  });

  it('a 403 whose request id header, type, code and permission are a key of another shape: text and --json', async () => {
    for (const json of [false, true]) {
      const result = await exportFrom(foreignBase, json);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toMatch(
        /permission denied \(403, \[REDACTED\], on GET \/api\/v1\/companies\/[^,]*, request id \[REDACTED\]\): needs \[REDACTED\]/,
      );
      expectNoKey(result);
    }
  });
});
