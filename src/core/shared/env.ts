import * as z from 'zod';
import { ConfigError, issuesFromZod } from './errors';
import { lazySchema } from './lazy-schema';
import { BASE_URL_PROBLEMS, baseUrlProblem, isTimeZone, TIME_ZONE_EXPECTED } from '../../../contract/setting-rules';

/**
 * Reads and validates environment variables once, at module load of a handler, so that a
 * misconfigured function fails at init with the variable's name instead of mid-request.
 */
export function readEnv<S extends z.ZodObject>(schema: S, env: NodeJS.ProcessEnv = process.env): z.output<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  throw new ConfigError(issuesFromZod(result.error));
}

/**
 * `readEnv` of the variables `names` of `shape` only. A composition root describes every variable
 * its functions may be given; each handler names the ones its construct gives it, so a function
 * requires (and is granted) only those, and a missing one fails its cold start with its name.
 */
export function readEnvOf<T extends z.core.$ZodShape, K extends keyof T & string>(
  shape: T,
  names: readonly K[],
  env: NodeJS.ProcessEnv = process.env,
): z.output<z.ZodObject<Pick<T, K>>> {
  const picked = Object.fromEntries(names.map((name) => [name, shape[name]])) as Pick<T, K>;
  return readEnv(z.object(picked), env);
}

/** A setting this function was not configured with, reached for anyway: named like readEnv names it. */
export function requiredEnv<T>(value: T | undefined, name: string): T {
  if (value === undefined) throw new ConfigError([{ path: name, message: 'required by this function' }]);
  return value;
}

/** A duration read from the environment (in seconds, or `unitMs`), in milliseconds; unset stays unset. */
export function envMs(value: number | undefined, unitMs = 1000): number | undefined {
  return value === undefined ? undefined : value * unitMs;
}

/** Common env var shapes. */
export const envString = /* @__PURE__ */ lazySchema(() => z.string().trim().min(1));
export const envArn = /* @__PURE__ */ lazySchema(() =>
  z.string().regex(/^arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:\d{12}:.+/, 'expected an ARN'),
);
export const envUrl = /* @__PURE__ */ lazySchema(() => z.url({ protocol: /^https?$/ }));

/**
 * The service's base URL, held at cold start to the rule the stage's `baseUrl` is held to at synth
 * (contract/setting-rules.ts), so that a variable edited in the console fails the cold start with its
 * name rather than every invocation with the client's `baseUrl`. No message quotes the URL.
 */
export const envBaseUrl = /* @__PURE__ */ lazySchema(() =>
  z.string().superRefine((raw, ctx) => {
    const problem = baseUrlProblem(raw);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: BASE_URL_PROBLEMS[problem] });
  }),
);

/** An IANA time zone, by the stage's rule (contract/setting-rules.ts). */
export const envTimeZone = /* @__PURE__ */ lazySchema(() => z.string().trim().refine(isTimeZone, TIME_ZONE_EXPECTED));

const BLANK = 'must not be blank (unset it for the default)';

/**
 * A whole number in decimal digits, a minus sign only where `min` admits negatives. Not
 * `z.coerce.number()`: it reads a blank value as 0 (a refresh margin of 0, a secret cache turned
 * off) and `0x10` or `1e3` as numbers nobody wrote. A blank value is refused, not read as unset:
 * the stack never writes one, so it is a hand edit gone wrong (decision 80).
 */
export const envInt = (min: number, max: number) =>
  z
    .string()
    .refine((text) => text.trim() !== '', { error: BLANK, abort: true })
    .regex(min < 0 ? /^-?\d+$/ : /^\d+$/, 'expected a whole number in decimal digits')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

/** A decimal number (`0.05`, or `1e-7` as String() writes a small one); blank is refused, as by envInt. */
export const envDecimal = (min: number, max: number) =>
  z
    .string()
    .refine((text) => text.trim() !== '', { error: BLANK, abort: true })
    .regex(/^\d+(\.\d+)?(e-?\d+)?$/, 'expected a decimal number, e.g. 0.05')
    .transform(Number)
    .pipe(z.number().min(min).max(max));
