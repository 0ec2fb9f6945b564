import {
  type AccountingClient,
  InvalidGrantError,
  ResponseValidationError,
  type Transport,
  apiKeyAuth,
  createAccountingClient,
  fetchTransport,
  httpTransport,
  institutionAuth,
} from '../../../src/core/accounting-api';
import { ManualClock } from '../../../src/core/shared/clock';
import { type CannedResponse, type RecordingServer, startRecordingServer } from '../../helpers/recording-server';

/**
 * Bodies framed in ways the spec's "responses are JSON" allows and our sandbox never sends, through
 * both transports against a real socket: a UTF-8 byte order mark (RFC 8259 §8.1 lets a parser ignore
 * it; .NET and some Java stacks write one) and a 2xx body of whitespace alone where verify and
 * expire have nothing to say (spec §4.1: their bodies are "not shown").
 */

const BOM = '\uFEFF';
const TRANSACTION = {
  publicId: '3f1b2c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
  amount: '-49.99',
  valueDate: '2026-10-05T12:00:00+02:00',
  note: 'é',
};
const PAGE = `{"count": 1, "next": null, "previous": null, "results": [${JSON.stringify(TRANSACTION)}]}`;
const INSTITUTION = { institutionId: 'inst-7', secretKey: 'sk_framing_0123456789abcdef' };
const REFRESH = 'opaque-refresh-0123456789abcdef';

let answer: CannedResponse = { status: 200 };
let server: RecordingServer;

beforeAll(async () => {
  server = await startRecordingServer(() => answer);
});
afterAll(() => server.stop());

const TRANSPORTS: [string, () => Transport][] = [
  ['httpTransport', () => httpTransport()],
  ['fetchTransport', () => fetchTransport()],
];

describe.each(TRANSPORTS)('bodies the sandbox never frames so (%s)', (_name, transport) => {
  function client(kind: 'apiKey' | 'institution' = 'apiKey'): AccountingClient {
    return createAccountingClient({
      baseUrl: `${server.origin}/api/v1`,
      credentials: kind === 'apiKey' ? apiKeyAuth('sbx_Framing0123456789abcdefghijklm') : institutionAuth(INSTITUTION),
      transport: transport(),
      clock: ManualClock.autoAdvancing(),
      retry: { maxAttempts: 1 },
      itemJson: true,
    });
  }
  const json = (status: number, body: string): CannedResponse => ({
    status,
    headers: { 'content-type': 'application/json; charset=utf-8' },
    body,
  });

  it('a page behind a byte order mark is read, and each item keeps its text as sent', async () => {
    answer = json(200, BOM + PAGE);
    const [item, ...rest] = await client().transactions.list().all();
    expect(rest).toEqual([]);
    expect(item?.parsed).toMatchObject({ publicId: TRANSACTION.publicId, amount: -4999n, valueDate: TRANSACTION.valueDate });
    expect(item?.raw).toEqual(TRANSACTION);
    // The offsets are into the bytes after the mark: the item's text, not three bytes before it.
    const text = item?.json && Buffer.from(item.json.bytes.subarray(item.json.start, item.json.end)).toString('utf8');
    expect(text).toBe(JSON.stringify(TRANSACTION));
  });

  it('an error body behind a byte order mark is read for its code, as the token refusal rules need', async () => {
    answer = json(401, BOM + JSON.stringify({ detail: 'Token is invalid or expired', code: 'token_not_valid' }));
    const error = await client('institution')
      .institution.refreshToken(REFRESH)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidGrantError);
    expect(error).toMatchObject({ status: 401, apiCode: 'token_not_valid' });
    expect((error as Error).message).not.toContain('{');
  });

  it.each([
    ['a newline', '\n'],
    ['CRLF and spaces', ' \r\n '],
    ['a byte order mark and a newline', `${BOM}\n`],
  ])('verify and expire answered 200 with %s: valid and done, as an empty body', async (_label, body) => {
    answer = { status: 200, headers: { 'content-type': 'application/json' }, body };
    const institution = client('institution').institution;
    expect(await institution.verifyToken(REFRESH)).toEqual({ valid: true, expiresAt: null });
    expect(await institution.expireToken(REFRESH)).toEqual({ expired: true });
  });

  it('a list answered with whitespace alone is still refused, naming the envelope', async () => {
    answer = json(200, '\n');
    const error = await client()
      .transactions.list()
      .all()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResponseValidationError);
    // An empty body where the envelope (spec §4.3) is required, not a parse failure.
    expect((error as ResponseValidationError).issues).toEqual([{ path: '', message: 'expected object' }]);
  });

  it('a body that is not JSON after the mark is still refused as such', async () => {
    answer = json(200, `${BOM}OK`);
    await expect(client('institution').institution.expireToken(REFRESH)).rejects.toThrow(/body is not valid JSON/);
  });
});
