import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { closeServer, listenOnLoopback } from './loopback';

/**
 * A fake EventBridge Scheduler for the real @aws-sdk/client-scheduler (restJson1 over HTTP on
 * loopback): the one-time schedule operations the revocation scheduler uses, nothing more.
 * `fireDue(now, invoke)` plays the service's part: it invokes the target of every `at(...)`
 * schedule whose time has come and deletes the schedule (ActionAfterCompletion DELETE).
 */
export interface FakeSchedule {
  Name: string;
  GroupName: string;
  ScheduleExpression: string;
  ScheduleExpressionTimezone?: string;
  ActionAfterCompletion?: string;
  FlexibleTimeWindow?: { Mode: string };
  Description?: string;
  Target: { Arn: string; RoleArn: string; Input?: string; RetryPolicy?: unknown };
}

export interface RunningScheduler {
  endpoint: string;
  schedules(): FakeSchedule[];
  /** Invokes every schedule due at `now` (epoch ms) with its parsed input, then deletes it. */
  fireDue(now: number, invoke: (target: string, input: unknown) => Promise<unknown>): Promise<number>;
  /** Calls per operation, e.g. `{ CreateSchedule: 1 }`. */
  calls: Record<string, number>;
  /** Operations answered AccessDeniedException (403), as for a caller whose IAM lacks them: `DeleteSchedule`, `GetSchedule`. */
  denied: Set<string>;
  stop(): Promise<void>;
}

const AT = /^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)$/;

export async function startScheduler(): Promise<RunningScheduler> {
  const schedules = new Map<string, FakeSchedule>();
  const calls: Record<string, number> = {};
  const denied = new Set<string>();
  const key = (group: string, name: string) => `${group}/${name}`;
  const count = (operation: string) => (calls[operation] = (calls[operation] ?? 0) + 1);

  const fail = (res: ServerResponse, status: number, type: string, message: string) => {
    res.writeHead(status, { 'content-type': 'application/json', 'x-amzn-errortype': type });
    res.end(JSON.stringify({ Message: message }));
  };
  const ok = (res: ServerResponse, body: unknown) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const arn = (s: Pick<FakeSchedule, 'GroupName' | 'Name'>) =>
    `arn:aws:scheduler:eu-central-1:000000000000:schedule/${s.GroupName}/${s.Name}`;

  const refuse = (res: ServerResponse, operation: string, group: string, name: string) =>
    fail(
      res,
      403,
      'AccessDeniedException',
      `not authorized to perform: scheduler:${operation} on ${arn({ GroupName: group, Name: name })}`,
    );

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>) : {};
    const named = /^\/schedules\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'GET' && url.pathname === '/schedules') {
      count('ListSchedules');
      const group = url.searchParams.get('ScheduleGroup') ?? 'default';
      const prefix = url.searchParams.get('NamePrefix') ?? '';
      const list = [...schedules.values()].filter((s) => s.GroupName === group && s.Name.startsWith(prefix));
      return ok(res, {
        Schedules: list.map((s) => ({
          Name: s.Name,
          GroupName: s.GroupName,
          Arn: arn(s),
          State: 'ENABLED',
          Target: { Arn: s.Target.Arn },
        })),
      });
    }
    if (!named) return fail(res, 404, 'ResourceNotFoundException', `no route ${req.method} ${url.pathname}`);
    const name = decodeURIComponent(named[1]!);
    const group =
      (req.method === 'POST' || req.method === 'PUT' ? (body.GroupName as string | undefined) : url.searchParams.get('groupName')) ??
      'default';
    const existing = schedules.get(key(group, name));
    switch (req.method) {
      case 'POST':
        count('CreateSchedule');
        if (existing) return fail(res, 409, 'ConflictException', `Schedule ${name} already exists.`);
        schedules.set(key(group, name), { ...(body as unknown as FakeSchedule), Name: name, GroupName: group });
        return ok(res, { ScheduleArn: arn({ GroupName: group, Name: name }) });
      case 'PUT':
        count('UpdateSchedule');
        if (!existing) return fail(res, 404, 'ResourceNotFoundException', `Schedule ${name} does not exist.`);
        schedules.set(key(group, name), { ...(body as unknown as FakeSchedule), Name: name, GroupName: group });
        return ok(res, { ScheduleArn: arn(existing) });
      case 'GET':
        count('GetSchedule');
        if (denied.has('GetSchedule')) return refuse(res, 'GetSchedule', group, name);
        if (!existing) return fail(res, 404, 'ResourceNotFoundException', `Schedule ${name} does not exist.`);
        return ok(res, { ...existing, Arn: arn(existing), State: 'ENABLED' });
      case 'DELETE':
        count('DeleteSchedule');
        // As IAM does: the caller's action is refused before the service looks for the schedule.
        if (denied.has('DeleteSchedule')) return refuse(res, 'DeleteSchedule', group, name);
        if (!existing) return fail(res, 404, 'ResourceNotFoundException', `Schedule ${name} does not exist.`);
        schedules.delete(key(group, name));
        return ok(res, {});
      default:
        return fail(res, 404, 'ResourceNotFoundException', `no route ${req.method} ${url.pathname}`);
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => fail(res, 500, 'InternalServerException', String(error)));
  });
  const endpoint = await listenOnLoopback(server);

  return {
    endpoint,
    calls,
    denied,
    schedules: () => [...schedules.values()].map((s) => structuredClone(s)),
    async fireDue(now, invoke) {
      let fired = 0;
      for (const [id, schedule] of [...schedules]) {
        const at = AT.exec(schedule.ScheduleExpression);
        if (!at || Date.parse(`${at[1]}Z`) > now) continue;
        await invoke(schedule.Target.Arn, schedule.Target.Input === undefined ? undefined : JSON.parse(schedule.Target.Input));
        if (schedule.ActionAfterCompletion === 'DELETE') schedules.delete(id);
        fired++;
      }
      return fired;
    },
    stop: () => closeServer(server),
  };
}
