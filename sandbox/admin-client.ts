import { SandboxAdminError, makeAdmin, type SandboxAdmin } from './admin';

/**
 * The admin API of a sandbox running in another process (`npm run sandbox`, a benchmark's child),
 * with the same methods as `startSandbox().admin`. `url` is the sandbox's origin, its base URL
 * (`…/api/v1`) or its admin URL (`…/__sandbox/`).
 */
export function connectSandboxAdmin(url: string): SandboxAdmin {
  const origin = new URL(url).origin;
  return makeAdmin(async (operation, input) => {
    const response = await fetch(`${origin}/__sandbox/${operation}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(input ?? {}),
    });
    const text = await response.text();
    const body: unknown = text === '' ? undefined : JSON.parse(text);
    if (!response.ok) {
      const error = (body as { error?: { code?: string; message?: string; param?: string | null } } | undefined)?.error;
      throw new SandboxAdminError(response.status, error?.code ?? 'admin_failed', error?.message ?? `admin ${operation} failed`, {
        param: error?.param ?? null,
      });
    }
    return body;
  });
}
