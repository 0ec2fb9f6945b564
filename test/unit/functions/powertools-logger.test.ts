import type { Context } from 'aws-lambda';
import { LambdaLogger } from '../../../functions/_shared/powertools-logger';
import { forgetRegisteredSecrets, registerSecret } from '../../../src/core/shared/redact';
import { captureStdout } from '../../helpers/lambda';

const CANARY = 'sbx_CanaryLoggerKey0123456789abcdef';
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTEifQ.c2lnbmF0dXJlLXZhbHVl';

let written: string[] = [];
let write: jest.SpyInstance | undefined;
beforeEach(() => {
  written = [];
  write = captureStdout(written);
});
afterEach(() => {
  write?.mockRestore();
  forgetRegisteredSecrets();
});

const lines = () => written.map((line) => JSON.parse(line) as Record<string, unknown>);
const context = (requestId: string) => ({ awsRequestId: requestId, functionName: 'fn' }) as Context;

describe('LambdaLogger (Powertools Logger behind our port)', () => {
  it('redacts the message, fields, child fields and errors of every line', () => {
    registerSecret(CANARY);
    const logger = LambdaLogger.create({ level: 'debug' });
    logger.beginInvocation(context('r1'), 'corr-1');
    const child = logger.child({ companyKey: CANARY, header: `Bearer ${JWT}` });
    child.warn(`refused ${JWT}`, { error: new Error(`upstream echoed ${CANARY}`, { cause: new Error(JWT) }), token: 'plain-token-value' });

    const text = written.join('');
    expect(text).not.toContain(CANARY);
    expect(text).not.toContain(JWT);
    expect(lines()).toEqual([
      expect.objectContaining({
        level: 'WARN',
        message: 'refused [REDACTED_JWT]',
        correlation_id: 'corr-1',
        function_request_id: 'r1',
        token: '[REDACTED]',
        header: 'Bearer [REDACTED]',
        error: { name: 'Error', message: 'upstream echoed [REDACTED]', cause: { name: 'Error', message: '[REDACTED_JWT]' } },
      }),
    ]);
  });

  it('filters at its level and, with a sample rate, logs a drawn invocation at debug', () => {
    const draws = [0.5, 0.05];
    const logger = LambdaLogger.create({ level: 'info', sampleRate: 0.1, random: () => draws.shift()! });

    logger.beginInvocation(context('r1'), 'c1');
    logger.debug('not sampled');
    logger.info('kept');
    logger.beginInvocation(context('r2'), 'c2');
    logger.debug('sampled');

    expect(lines().map((l) => [l.message, l.function_request_id, l.correlation_id, l.sampling_rate])).toEqual([
      ['kept', 'r1', 'c1', 0.1],
      ['sampled', 'r2', 'c2', 0.1],
    ]);
  });
});
