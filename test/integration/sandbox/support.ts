// Plain-fetch helpers for the sandbox tests: they talk HTTP like any client would, without src/.
export interface CallOptions {
  method?: string;
  bearer?: string;
  institution?: string;
  companyId?: string;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface CallResult {
  status: number;
  headers: Headers;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/** `path` is relative to the base URL (`/accounting/transactions/?page=2`) or an absolute URL. */
export async function call(baseUrl: string, path: string, options: CallOptions = {}): Promise<CallResult> {
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
  if (options.bearer !== undefined) headers.authorization = `Bearer ${options.bearer}`;
  if (options.institution !== undefined) headers.institution = options.institution;
  if (options.companyId !== undefined) headers['x-company-id'] = options.companyId;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path.startsWith('http') ? path : `${baseUrl}${path}`, {
    method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, text, body };
}

export function jwtPayload(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;
}

/** Minor units of an amount in either encoding. */
export function minor(amount: number | string): bigint {
  if (typeof amount === 'number') return BigInt(amount);
  const [whole, fraction] = amount.replace('-', '').split('.') as [string, string];
  const value = BigInt(whole) * 100n + BigInt(fraction);
  return amount.startsWith('-') ? -value : value;
}

export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
