import * as z from 'zod';
import { scheduledCorrelationId, scheduledEventSchema, scheduledOrManualEventSchema } from '../../../functions/_shared/scheduled-event';
import { parseWith, ValidationError } from '../../../src/core/shared/errors';

const ENVELOPE = {
  source: 'acctops.scheduler',
  schedule: 'key-rotation-doctor',
  scheduledAt: '2026-11-01T03:00:00+01:00',
  executionId: 'exec-1',
};

function issuesOf(schema: z.ZodType, event: unknown) {
  try {
    parseWith(schema, event, 'event');
  } catch (error) {
    if (error instanceof ValidationError) return error.issues.map((i) => i.path);
    throw error;
  }
  return [];
}

describe("the scheduled handlers' one envelope", () => {
  it('a scheduled-only handler needs the whole envelope of its own schedule, and nothing else', () => {
    const schema = scheduledEventSchema('monthly-export');
    expect(parseWith(schema, { ...ENVELOPE, schedule: 'monthly-export' }, 'event').executionId).toBe('exec-1');
    expect(issuesOf(schema, ENVELOPE)).toEqual(['schedule']);
    expect(issuesOf(schema, {})).toEqual(['source', 'schedule', 'scheduledAt', 'executionId']);
    expect(issuesOf(schema, { ...ENVELOPE, schedule: 'monthly-export', repair: true })).toEqual(['']);
  });

  it('a handler also invoked by hand takes its parameters alone, or with the whole envelope; half an envelope names what is missing', () => {
    const schema = scheduledOrManualEventSchema('key-rotation-doctor', { repair: z.boolean().optional() });
    expect(parseWith(schema, {}, 'event')).toEqual({});
    expect(parseWith(schema, { repair: false }, 'event')).toEqual({ repair: false });
    expect(parseWith(schema, { ...ENVELOPE, repair: false }, 'event')).toEqual({ ...ENVELOPE, repair: false });
    const { executionId: _, ...withoutExecution } = ENVELOPE;
    expect(issuesOf(schema, withoutExecution)).toEqual(['executionId']);
    expect(issuesOf(schema, { schedule: 'key-rotation-doctor' })).toEqual(['source', 'scheduledAt', 'executionId']);
    expect(issuesOf(schema, { ...ENVELOPE, schedule: 'health-check' })).toEqual(['schedule']);
  });

  it('the execution id is the correlation id; anything else is none', () => {
    expect(scheduledCorrelationId(ENVELOPE)).toBe('exec-1');
    expect(scheduledCorrelationId({ executionId: 7 })).toBeUndefined();
    expect(scheduledCorrelationId({})).toBeUndefined();
    expect(scheduledCorrelationId(null)).toBeUndefined();
  });
});
