import * as z from 'zod';
import { ConfigError, issuesFromZod } from './errors';
import { lazySchema } from './lazy-schema';

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
export const envString = lazySchema(() => z.string().trim().min(1));
export const envArn = lazySchema(() => z.string().regex(/^arn:aws[a-z-]*:[a-z0-9-]+:[a-z0-9-]*:\d{12}:.+/, 'expected an ARN'));
export const envUrl = lazySchema(() => z.url({ protocol: /^https?$/ }));
export const envInt = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
