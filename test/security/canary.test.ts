import { spawnSync } from 'node:child_process';
import { gzipSync } from 'node:zlib';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { MemoryEventPublisher } from '../../src/adapters/local/memory-event-publisher';
import { apiKeyAuth, createAccountingClient, TransportFailure } from '../../src/core/accounting-api';
import { MemoryLogger } from '../../src/core/shared/logger';
import { keyPrefix, redact } from '../../src/core/shared/redact';
import {
  CANARY,
  CANARY_MARKER,
  CanaryLeakError,
  canaryApiKey,
  expectNoCanaries,
  findCanaries,
  takeRecordedHits,
  textOf,
  trackSecret,
} from '../helpers/canary';
import { RECORDER, hookConsole, hookStream } from '../helpers/canary-setup';

/**
 * The canary scan proves itself: the scanner finds every kind of credential, the global hook
 * (test/helpers/canary-setup.ts) sees stdout, stderr, console, logger lines and events, and a test
 * file that leaks fails, in a child jest run, without the failure printing the secret.
 */

const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4IiwiZXhwIjoxfQ.c2lnbmF0dXJl';
const ROOT = join(__dirname, '..', '..');

describe('the scanner', () => {
  it('finds each canary, a JWT, a full API key and a tracked value; a key prefix and redacted forms pass', () => {
    for (const value of Object.values(CANARY).filter((v) => v !== CANARY.institutionId)) {
      expect(findCanaries(`x ${value} y`).length).toBeGreaterThan(0);
    }
    expect(findCanaries(`Bearer ${JWT}`)).toEqual([expect.objectContaining({ kind: 'jwt' })]);
    expect(findCanaries('key sbx_AbCdEfGh0123456789AbCdEfGh012345')).toEqual([expect.objectContaining({ kind: 'api-key' })]);
    const minted = 'minted-at-run-time-0f1e2d3c';
    expect(findCanaries(minted)).toEqual([]);
    trackSecret(minted);
    expect(findCanaries(`"${minted}"`)).toEqual([expect.objectContaining({ kind: 'tracked' })]);

    expect(findCanaries(`prefix ${keyPrefix(CANARY.apiKey)} and ${keyPrefix(canaryApiKey('other'))}`)).toEqual([]);
    expect(findCanaries(JSON.stringify(redact({ token: CANARY.accessToken, header: `Bearer ${JWT}` })))).toEqual([]);
  });

  it('canary API keys are keys the client accepts, with the marker after the loggable prefix', async () => {
    expect(CANARY.apiKey).toMatch(/^sbx_[A-Za-z0-9]{32}$/);
    expect(keyPrefix(CANARY.apiKey)).not.toContain(CANARY_MARKER);
    const sent: string[] = [];
    const client = createAccountingClient({
      baseUrl: 'http://127.0.0.1:9/api/v1',
      credentials: apiKeyAuth(CANARY.apiKey),
      transport: (request) => {
        sent.push(request.headers.authorization ?? '');
        return Promise.reject(new TransportFailure('refused'));
      },
      retry: { maxAttempts: 1 },
    });
    await expect(client.companies.list().all()).rejects.toThrow();
    expect(sent).toEqual([`Bearer ${CANARY.apiKey}`]);
  });

  it('reads errors with their causes, gzip buffers, maps and nested objects; the leak error never holds the value', () => {
    const error = new Error('outer', { cause: new Error(`inner ${CANARY.refreshToken}`) });
    expect(() => expectNoCanaries(error, 'an error')).toThrow(CanaryLeakError);
    expect(() => expectNoCanaries(gzipSync(Buffer.from(`{"k":"${CANARY.apiKey}"}`)), 'an object')).toThrow(CanaryLeakError);
    expect(() => expectNoCanaries(new Map([['a', { deep: [CANARY.institutionSecret] }]]))).toThrow(CanaryLeakError);
    expect(() => expectNoCanaries({ amount: 10n, ok: 'plain text' })).not.toThrow();

    const leak = (() => {
      try {
        expectNoCanaries({ secret: CANARY.webhookSecret }, 'event detail');
      } catch (e) {
        return e as CanaryLeakError;
      }
      throw new Error('no leak found');
    })();
    expect(leak.message).toContain('canary in event detail');
    expect(textOf(leak)).not.toContain(CANARY.webhookSecret);
    expect(findCanaries(textOf(leak))).toEqual([]);
  });
});

describe('the global hook', () => {
  afterEach(() => {
    // The hits these tests provoke on purpose are taken here, before the hook's own afterEach fails the test.
    takeRecordedHits();
  });

  it('records stdout, stderr and console writes (on stand-ins: the real ones stay clean)', () => {
    // The process's streams and console are hooked; these stand-ins get the same hook.
    expect((process.stdout as unknown as Record<symbol, unknown>)[RECORDER]).toBeInstanceOf(Function);
    expect((process.stderr as unknown as Record<symbol, unknown>)[RECORDER]).toBeInstanceOf(Function);
    const written: unknown[] = [];
    const stdout = { write: (chunk: unknown) => written.push(chunk) };
    const stderr = { write: (chunk: unknown) => written.push(chunk) };
    const logged: unknown[][] = [];
    const standIn = {
      log: (...a: unknown[]) => logged.push(a),
      info: () => undefined,
      warn: () => undefined,
      error: () => undefined,
      debug: () => undefined,
    };
    hookStream(stdout, 'stdout');
    hookStream(stderr, 'stderr');
    hookConsole(standIn);
    takeRecordedHits();
    stdout.write(`leak ${CANARY.institutionSecret}\n`);
    stderr.write(Buffer.from(`leak ${CANARY.apiKey}\n`));
    standIn.log('leak', { token: JWT });
    expect(written).toHaveLength(2);
    expect(logged).toHaveLength(1);
    expect(takeRecordedHits().map((h) => [h.kind, h.where])).toEqual(
      expect.arrayContaining([
        ['canary', 'stdout'],
        ['canary', 'stderr'],
        ['api-key', 'stderr'],
        ['jwt', 'console.log'],
      ]),
    );
  });

  it('records every logger line that would carry a secret, and never a redacted one', () => {
    takeRecordedHits();
    const logger = new MemoryLogger();
    // Redacted by the logger: a secret-named field and a JWT anywhere.
    logger.info('fine', { refreshToken: CANARY.refreshToken, note: `Bearer ${JWT}` });
    expect(takeRecordedHits()).toEqual([]);
    // Not recognisable to the redactor: a secret under an innocent name.
    logger.child({ companyId: 'c' }).warn('oops', { note: CANARY.webhookSecret });
    expect(takeRecordedHits()).toEqual([expect.objectContaining({ kind: 'canary', where: 'log line' })]);
  });

  it('records events published to the memory event bus', async () => {
    takeRecordedHits();
    await new MemoryEventPublisher().publish([{ type: 'Oops', time: 0, detail: { key: CANARY.otherApiKey } }]);
    expect(takeRecordedHits()).toEqual([
      expect.objectContaining({ kind: 'canary', where: 'published event' }),
      expect.objectContaining({ kind: 'api-key', where: 'published event' }),
    ]);
  });

  it('fails a test file that leaks, naming the place and never the value (child jest run)', () => {
    const run = spawnSync(
      process.execPath,
      [
        require.resolve('jest/bin/jest'),
        '--ci',
        '--runInBand',
        '--testMatch',
        '**/test/fixtures/canary/leak.fixture.ts',
        '--testPathIgnorePatterns',
        '/node_modules/',
      ],
      { cwd: ROOT, encoding: 'utf8', env: { ...process.env, FORCE_COLOR: '0' }, timeout: 60_000 },
    );
    const output = `${run.stdout}\n${run.stderr}`;
    expect(run.status).toBe(1);
    expect(output).toMatch(/✕ writes an unregistered canary to stdout/);
    expect(output).toMatch(/✓ writes nothing secret/);
    expect(output).toContain('secret leak: 1 credential(s) found');
    expect(output).toContain('canary in stdout');
    // The child printed the leak on its stdout itself (that is the leak), but its report does not repeat it.
    expect(run.stderr).not.toContain(CANARY.webhookSecret);
    takeRecordedHits();
  });
});

describe('committed snapshots and fixtures', () => {
  it('hold no canary and no credential', () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (path.includes('__snapshots__') || path.includes(`${join('test', 'fixtures')}`)) files.push(path);
      }
    };
    for (const dir of ['test', 'src', 'sandbox', 'functions', 'lib', 'bin']) walk(join(ROOT, dir));
    const scanned = files.filter((f) => !f.endsWith('leak.fixture.ts'));
    for (const file of scanned) expectNoCanaries(readFileSync(file), relative(ROOT, file));
    expect(files.some((f) => f.endsWith('leak.fixture.ts'))).toBe(true);
  });
});
