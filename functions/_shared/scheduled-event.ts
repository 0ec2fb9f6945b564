import * as z from 'zod';

/** The `source` of every acctops schedule's input. */
export const SCHEDULER_SOURCE = 'acctops.scheduler';

/**
 * The input every acctops schedule sends its function (the `input` of each EventBridge Scheduler
 * target in lib/constructs): which schedule, when it was due, and the execution. One shape for all
 * scheduled handlers, so a runbook invokes any of them the same way, and the execution id becomes
 * the invocation's correlation id (scheduledCorrelationId).
 */
const envelope = <S extends string>(schedule: S) => ({
  source: z.literal(SCHEDULER_SOURCE),
  schedule: z.literal(schedule),
  /** `<aws.scheduler.scheduled-time>`: the planners derive the month from it, not from the clock. */
  scheduledAt: z.iso.datetime({ offset: true }),
  /** `<aws.scheduler.execution-id>`; a runbook gives a new one to make a new run. */
  executionId: z.string().min(1).max(128),
});

/**
 * The event schema of a scheduled handler: the envelope of `schedule`, plus the handler's own
 * optional parameters (`params`). Strict: a member nobody reads is refused, so a typo in a
 * runbook's payload fails with its name instead of being ignored.
 */
export function scheduledEventSchema<S extends string, P extends z.ZodRawShape = Record<never, never>>(schedule: S, params?: P) {
  return z.strictObject({ ...envelope(schedule), ...(params ?? ({} as P)) });
}

/**
 * The same, for a handler that the CLI or a runbook also invokes by hand with only its parameters
 * (`acctops doctor` sends `{}` or `{ "repair": false }`): the envelope is then absent as a whole.
 * Half an envelope is refused, naming the missing member.
 */
export function scheduledOrManualEventSchema<S extends string, P extends z.ZodRawShape = Record<never, never>>(schedule: S, params?: P) {
  const members = envelope(schedule);
  const names = Object.keys(members) as (keyof typeof members)[];
  return z
    .strictObject({
      source: members.source.optional(),
      schedule: members.schedule.optional(),
      scheduledAt: members.scheduledAt.optional(),
      executionId: members.executionId.optional(),
      ...(params ?? ({} as P)),
    })
    .superRefine((event, ctx) => {
      const given = names.filter((name) => (event as Record<string, unknown>)[name] !== undefined);
      if (given.length === 0) return;
      for (const name of names) {
        if (!given.includes(name))
          ctx.addIssue({
            code: 'custom',
            path: [name],
            message: `the schedule's envelope needs ${name} (or leave out ${given.join(', ')})`,
          });
      }
    });
}

/** The execution id of a scheduled invocation: the correlation id of everything it logs and emits. */
export function scheduledCorrelationId(event: unknown): string | undefined {
  const id = (event as { executionId?: unknown } | null)?.executionId;
  return typeof id === 'string' ? id : undefined;
}
