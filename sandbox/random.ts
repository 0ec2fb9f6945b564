/**
 * Deterministic randomness. Everything the sandbox invents (ids, demo data, generated
 * transactions) is derived from the `seed` option, so a run can be reproduced exactly. Secrets
 * (API keys, the demo's included, institution secrets, the token signing key) use `node:crypto`
 * instead: the seed is public (decision 97 in docs/architecture.md).
 */

/** FNV-1a over a string: turns any seed into 32 bits. */
export function hashString(input: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < input.length; i++) {
    h ^= input.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** murmur3's finaliser: a cheap, well-mixed 32-bit hash of two integers. */
export function mix(a: number, b: number): number {
  let h = (a ^ Math.imul(b, 0x9e3779b1)) >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** The low `width` (at most 8) hex digits of a 32-bit value. */
export function hex(value: number, width: number): string {
  return (value >>> 0)
    .toString(16)
    .padStart(8, '0')
    .slice(8 - width);
}

/** mulberry32: a small seeded sequence for data that is generated once. */
export class Prng {
  private state: number;

  constructor(seed: number | string) {
    this.state = typeof seed === 'number' ? seed >>> 0 : hashString(seed);
  }

  /** Where the sequence stands: `new Prng(position)` continues it exactly (a restored sandbox). */
  get position(): number {
    return this.state;
  }

  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return this.next() % n;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  /** A version-4-shaped UUID. */
  uuid(): string {
    const a = this.next();
    const b = this.next();
    const c = this.next();
    const d = this.next();
    return `${hex(a, 8)}-${hex(b >>> 16, 4)}-4${hex(b, 3)}-${(8 + (c >>> 30)).toString(16)}${hex(c, 3)}-${hex(d >>> 16, 4)}${hex(this.next(), 8)}`;
  }

  base62(length: number): string {
    let out = '';
    for (let i = 0; i < length; i++) out += BASE62[this.int(62)];
    return out;
  }
}

/** Base62 from random bytes (`node:crypto`), for secrets handed out at run time. The slight modulo bias does not matter in a simulator. */
export function secureBase62(bytes: Uint8Array): string {
  let out = '';
  for (const byte of bytes) out += BASE62[byte % 62];
  return out;
}
