import { TransportFailure, fetchTransport } from '../../../src/core/accounting-api';

/** The default transport, over a stand-in for fetch: no sockets. */
describe('fetchTransport', () => {
  const request = {
    method: 'POST' as const,
    url: 'http://api.test/api/v1/x/',
    headers: { accept: 'application/json' },
    body: '{}',
    timeoutMs: 5000,
  };

  it('returns status, lower-case headers and the body text, without following redirects', async () => {
    const calls: [string, RequestInit][] = [];
    const fake = ((url: string, init: RequestInit) => {
      calls.push([url, init]);
      return Promise.resolve(new Response('{"ok":true}', { status: 201, headers: { 'X-Request-Id': 'req_1', 'Retry-After': '2' } }));
    }) as unknown as typeof fetch;
    const response = await fetchTransport(fake)(request);
    expect(response).toEqual({
      status: 201,
      headers: expect.objectContaining({ 'x-request-id': 'req_1', 'retry-after': '2' }) as unknown,
      body: '{"ok":true}',
    });
    expect(calls[0]![1]).toMatchObject({ method: 'POST', body: '{}', redirect: 'manual' });
    expect(calls[0]![1].signal).toBeInstanceOf(AbortSignal);
  });

  it('with a body limit, also returns the bytes as received, whose UTF-8 text the body is', async () => {
    const text = '{"name":"Müller € 😀"}';
    const fake = (() => Promise.resolve(new Response(text, { status: 200 }))) as unknown as typeof fetch;
    const response = await fetchTransport(fake)({ ...request, maxBodyBytes: 1024 });
    expect(response.body).toBe(text);
    expect(Buffer.from(response.bytes!).equals(Buffer.from(text, 'utf8'))).toBe(true);
  });

  it('with a body limit, hands the first bytes of a 2xx body to onBodyStart once, before the rest is read', async () => {
    const chunks = ['{"count":2,"next":"n",', '"previous":null,', '"results":[]}'];
    const events: string[] = [];
    const streaming = (status: number) =>
      (() =>
        Promise.resolve(
          new Response(
            new ReadableStream<Uint8Array>({
              pull(controller) {
                const chunk = chunks[events.filter((e) => e.startsWith('chunk')).length];
                if (chunk === undefined) return controller.close();
                events.push(`chunk ${chunk}`);
                controller.enqueue(Buffer.from(chunk));
              },
            }),
            { status },
          ),
        )) as unknown as typeof fetch;
    const response = await fetchTransport(streaming(200))({
      ...request,
      maxBodyBytes: 1024,
      onBodyStart: (head) => events.push(`head ${Buffer.from(head).toString()}`),
    });
    expect(response.body).toBe(chunks.join(''));
    expect(events.filter((e) => e.startsWith('head'))).toEqual([`head ${chunks[0]}`]);
    // Handed over before the last chunk was pulled.
    expect(events.indexOf(`head ${chunks[0]}`)).toBeLessThan(events.indexOf(`chunk ${chunks[2]}`));

    events.length = 0;
    await fetchTransport(streaming(503))({ ...request, maxBodyBytes: 1024, onBodyStart: () => events.push('head') });
    expect(events).not.toContain('head');

    // Only speed depends on the hook: one that throws leaves the exchange as it was.
    events.length = 0;
    const despite = await fetchTransport(streaming(200))({
      ...request,
      maxBodyBytes: 1024,
      onBodyStart: () => {
        throw new Error('hook fault');
      },
    });
    expect(despite.body).toBe(chunks.join(''));
  });

  const failing = (error: unknown) => (() => Promise.reject(error)) as unknown as typeof fetch;
  const fetchFailed = (cause: unknown) => Object.assign(new TypeError('fetch failed'), { cause });

  it.each([
    ['refused', 'ECONNREFUSED', fetchFailed(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))],
    ['refused', 'ENOTFOUND', fetchFailed(Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }))],
    ['refused', 'ECONNREFUSED', fetchFailed({ errors: [{ code: 'ECONNREFUSED' }, { code: 'ECONNREFUSED' }] })],
    ['refused', 'bad port', fetchFailed(new Error('bad port'))],
    // The request is written after the handshake: one that failed sent nothing.
    [
      'refused',
      'ERR_SSL_WRONG_VERSION_NUMBER',
      fetchFailed(Object.assign(new Error('wrong version number'), { code: 'ERR_SSL_WRONG_VERSION_NUMBER' })),
    ],
    ['refused', 'CERT_HAS_EXPIRED', fetchFailed(Object.assign(new Error('certificate has expired'), { code: 'CERT_HAS_EXPIRED' }))],
    // A handshake alert (no cipher in common); real alerts in test/integration/client/tls-transport.test.ts.
    [
      'refused',
      'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE',
      fetchFailed(Object.assign(new Error('sslv3 alert handshake failure'), { code: 'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE' })),
    ],
    ['reset', 'UND_ERR_SOCKET', fetchFailed(Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }))],
    ['reset', undefined, new Error('something odd')],
    ['timeout', undefined, new DOMException('The operation was aborted due to timeout', 'TimeoutError')],
  ])('classifies a failure as %s (%s)', async (kind, code, error) => {
    const failure = await fetchTransport(failing(error))(request).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(TransportFailure);
    expect((failure as TransportFailure).kind).toBe(kind);
    expect((failure as TransportFailure).code).toBe(code);
    expect((failure as TransportFailure).cause).toBe(error);
  });

  it.each([
    ['CERT_HAS_EXPIRED', true],
    ['ERR_TLS_CERT_ALTNAME_INVALID', true],
    ['UNABLE_TO_GET_ISSUER_CERT_LOCALLY', true],
    // Verification codes that once fell through to `reset` (retried, and an unsafe POST called ambiguous).
    ['CERT_REVOKED', true],
    ['CERT_UNTRUSTED', true],
    ['INVALID_CA', true],
    ['CERT_SIGNATURE_FAILURE', true],
    ['ERR_SSL_WRONG_VERSION_NUMBER', true],
    ['ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION', true],
    ['ECONNREFUSED', false],
    ['ENOTFOUND', false],
    ['EAI_AGAIN', false],
    ['ECONNRESET', false],
    ['UND_ERR_SOCKET', false],
  ])('fetch failing with %s: final is %s (a refused handshake is, what may pass is not)', async (code, final) => {
    const failure = await fetchTransport(failing(fetchFailed(Object.assign(new Error(code), { code }))))(request).catch((e: unknown) => e);
    expect(failure).toMatchObject({ code, final, kind: final ? 'refused' : expect.any(String) });
  });

  it('is final for a port fetch refuses to connect to: the same URL is refused again', async () => {
    const failure = await fetchTransport(failing(fetchFailed(new Error('bad port'))))(request).catch((e: unknown) => e);
    expect(failure).toMatchObject({ kind: 'refused', code: 'bad port', final: true });
  });

  it("reports a port that fetch refuses to connect to (the Fetch standard's bad ports) as refused: nothing was sent", async () => {
    // The real fetch: it refuses before connecting, so this needs no listener.
    await expect(fetchTransport()({ ...request, url: 'http://127.0.0.1:1/api/v1/companies/' })).rejects.toMatchObject({ kind: 'refused' });
  });

  it('reports a body that breaks off as a reset: the request was processed', async () => {
    const body = new ReadableStream({
      pull(controller) {
        controller.error(Object.assign(new Error('terminated'), { code: 'UND_ERR_SOCKET' }));
      },
    });
    const fake = (() => Promise.resolve(new Response(body, { status: 200 }))) as unknown as typeof fetch;
    await expect(fetchTransport(fake)(request)).rejects.toMatchObject({ kind: 'reset' });
  });
});
