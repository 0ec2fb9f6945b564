import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../src/core/shared/clock';

/**
 * User tokens: JWT-shaped (docs/assumptions.md), signed with a key that lives and dies with this
 * sandbox. The signature only proves the sandbox issued a token; its state (revoked, used) lives
 * in the records here, keyed by `jti`.
 */

export type TokenType = 'access' | 'refresh';

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

export class TokenIssuer {
  private readonly records = new Map<string, TokenRecord>();
  private readonly byUser = new Map<string, Set<string>>();

  constructor(
    private readonly clock: Clock,
    readonly lifetimes: { accessSeconds: number; refreshSeconds: number },
    /** A restored sandbox keeps its key, so that the tokens it issued before still verify. */
    private readonly key: Buffer = randomBytes(32),
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
    const token = `${HEADER}.${payload}.${this.sign(`${HEADER}.${payload}`)}`;
    this.records.set(record.jti, record);
    let mine = this.byUser.get(subject.userId);
    if (!mine) this.byUser.set(subject.userId, (mine = new Set()));
    mine.add(record.jti);
    return { token, record };
  }

  private sign(input: string): string {
    return createHmac('sha256', this.key).update(input).digest('base64url');
  }

  /** What state a token is in, for the given expected type. Order: invalid, revoked, used, expired. */
  check(token: string, type: TokenType): TokenCheck {
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
    const record = typeof jti === 'string' ? this.records.get(jti) : undefined;
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
