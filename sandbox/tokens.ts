import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../src/core/shared/clock';

/**
 * User tokens: JWT-shaped (docs/assumptions.md), signed with a key that lives and dies with this
 * sandbox. The signature only proves the sandbox issued a token; its state (revoked, used) lives
 * in the records here, keyed by `jti`.
 */

export type TokenType = 'access' | 'refresh';

/**
 * `jwt`: three base64url segments (the default dialect). `opaque`: 64 hex characters, the jti
 * followed by a truncated HMAC of it (the minimal dialect): nothing for a client to decode.
 */
export type TokenFormat = 'jwt' | 'opaque';

export interface TokenRecord {
  jti: string;
  type: TokenType;
  userId: string;
  institutionId: string;
  /** Every token descending from one retrieve or create: a reused refresh token kills the family. */
  family: string;
  issuedAt: number;
  expiresAt: number;
  revokedAt: number | null;
  usedAt: number | null;
}

export type TokenCheck =
  | { ok: true; record: TokenRecord }
  | { ok: false; reason: 'invalid' }
  | { ok: false; reason: 'expired' | 'revoked' | 'used'; record: TokenRecord };

export interface TokenSubject {
  userId: string;
  institutionId: string;
  /** `sub` of the JWT: the user's external_id. */
  subject: string;
}

export interface IssuedPair {
  accessToken: string;
  refreshToken: string;
  expiresIn: number;
  access: TokenRecord;
}

const b64url = (input: Buffer | string) => Buffer.from(input).toString('base64url');
const HEADER = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
const OPAQUE = /^[0-9a-f]{64}$/;

export class TokenIssuer {
  private readonly records = new Map<string, TokenRecord>();
  private readonly byUser = new Map<string, Set<string>>();

  constructor(
    private readonly clock: Clock,
    readonly lifetimes: { accessSeconds: number; refreshSeconds: number },
    /** A restored sandbox keeps its key, so that the tokens it issued before still verify. */
    private readonly key: Buffer = randomBytes(32),
    /** The form of new tokens; `check` reads both, so a dialect can change between two runs. */
    private readonly format: TokenFormat = 'jwt',
  ) {}

  /** The signing key and every token's state: what a snapshot keeps. */
  snapshot(): { signingKey: string; records: TokenRecord[] } {
    return { signingKey: this.key.toString('base64'), records: [...this.records.values()].map((r) => ({ ...r })) };
  }

  /** Loads the records of a snapshot (the issuer must have been built with its signing key). */
  restore(records: readonly TokenRecord[]): void {
    for (const record of records) {
      this.records.set(record.jti, { ...record });
      let mine = this.byUser.get(record.userId);
      if (!mine) this.byUser.set(record.userId, (mine = new Set()));
      mine.add(record.jti);
    }
  }

  issuePair(subject: TokenSubject, family: string = randomBytes(8).toString('hex')): IssuedPair {
    const access = this.issue(subject, 'access', family);
    const refresh = this.issue(subject, 'refresh', family);
    return { accessToken: access.token, refreshToken: refresh.token, expiresIn: this.lifetimes.accessSeconds, access: access.record };
  }

  /** An access token alone, in the family of a refresh token that stays valid (a non-rotating refresh). */
  issueAccess(subject: TokenSubject, family: string): { accessToken: string; expiresIn: number; record: TokenRecord } {
    const access = this.issue(subject, 'access', family);
    return { accessToken: access.token, expiresIn: this.lifetimes.accessSeconds, record: access.record };
  }

  /** True when `credential` has the form of a token this issuer could have made (either format). */
  looksLikeToken(credential: string): boolean {
    return credential.split('.').length === 3 || OPAQUE.test(credential);
  }

  private issue(subject: TokenSubject, type: TokenType, family: string): { token: string; record: TokenRecord } {
    const now = this.clock.now();
    const iat = Math.floor(now / 1000);
    const lifetime = type === 'access' ? this.lifetimes.accessSeconds : this.lifetimes.refreshSeconds;
    const record: TokenRecord = {
      jti: randomBytes(12).toString('hex'),
      type,
      userId: subject.userId,
      institutionId: subject.institutionId,
      family,
      issuedAt: iat * 1000,
      expiresAt: (iat + lifetime) * 1000,
      revokedAt: null,
      usedAt: null,
    };
    const payload = b64url(
      JSON.stringify({ iss: 'acctops-sandbox', sub: subject.subject, iat, exp: iat + lifetime, jti: record.jti, token_type: type }),
    );
    const token =
      this.format === 'opaque' ? `${record.jti}${this.opaqueMac(record.jti)}` : `${HEADER}.${payload}.${this.sign(`${HEADER}.${payload}`)}`;
    this.records.set(record.jti, record);
    let mine = this.byUser.get(subject.userId);
    if (!mine) this.byUser.set(subject.userId, (mine = new Set()));
    mine.add(record.jti);
    return { token, record };
  }

  private sign(input: string): string {
    return createHmac('sha256', this.key).update(input).digest('base64url');
  }

  private opaqueMac(jti: string): string {
    return createHmac('sha256', this.key).update(`opaque:${jti}`).digest('hex').slice(0, 40);
  }

  private checkOpaque(token: string): string | undefined {
    const jti = token.slice(0, 24);
    const expected = Buffer.from(this.opaqueMac(jti));
    const given = Buffer.from(token.slice(24));
    return expected.length === given.length && timingSafeEqual(expected, given) ? jti : undefined;
  }

  /** What state a token is in, for the given expected type. Order: invalid, revoked, used, expired. */
  check(token: string, type: TokenType): TokenCheck {
    if (OPAQUE.test(token)) {
      const jti = this.checkOpaque(token);
      return jti === undefined ? { ok: false, reason: 'invalid' } : this.checkRecord(jti, type);
    }
    const parts = token.split('.');
    if (parts.length !== 3) return { ok: false, reason: 'invalid' };
    const [header, payload, signature] = parts as [string, string, string];
    const expected = Buffer.from(this.sign(`${header}.${payload}`));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return { ok: false, reason: 'invalid' };
    let jti: unknown;
    try {
      jti = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { jti?: unknown }).jti;
    } catch {
      return { ok: false, reason: 'invalid' };
    }
    return typeof jti === 'string' ? this.checkRecord(jti, type) : { ok: false, reason: 'invalid' };
  }

  private checkRecord(jti: string, type: TokenType): TokenCheck {
    const record = this.records.get(jti);
    if (!record || record.type !== type) return { ok: false, reason: 'invalid' };
    if (record.revokedAt !== null) return { ok: false, reason: 'revoked', record };
    if (record.usedAt !== null) return { ok: false, reason: 'used', record };
    if (this.clock.now() >= record.expiresAt) return { ok: false, reason: 'expired', record };
    return { ok: true, record };
  }

  markUsed(record: TokenRecord): void {
    record.usedAt = this.clock.now();
  }

  revokeUser(userId: string): void {
    this.revokeWhere(userId, () => true);
  }

  revokeFamily(userId: string, family: string): void {
    this.revokeWhere(userId, (r) => r.family === family);
  }

  private revokeWhere(userId: string, predicate: (r: TokenRecord) => boolean): void {
    const now = this.clock.now();
    for (const jti of this.byUser.get(userId) ?? []) {
      const record = this.records.get(jti);
      if (record && record.revokedAt === null && predicate(record)) record.revokedAt = now;
    }
  }
}
