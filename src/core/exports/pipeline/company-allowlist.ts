import { RegistryItemInvalidError, type CompanyRegistry } from '../../companies/company-registry';
import type { Clock } from '../../shared/clock';
import type { Logger } from '../../shared/logger';

/**
 * Which companies an entry point (the webhook) may request exports for. Asked per request, so
 * the answer comes from the company registry at run time, not from a list in the environment
 * (Lambda's 4 KB would cap it at about 90 companies, and adding one would need a deploy).
 */
export interface CompanyAllowlist {
  /** True for a registered, not removed company. Throws when the registry cannot be read. `logger`: the caller's, for findings. */
  allows(companyId: string, logger?: Logger): Promise<boolean>;
}

export interface RegistryAllowlistOptions {
  clock: Clock;
  /**
   * How long an answer is reused: one GetItem per company and minute at most, and a removed
   * company loses webhook access within this time.
   * @default 60 s
   */
  ttlMs?: number;
  /** Answers kept at once; beyond it the cache starts over (its memory stays bounded). @default 10,000 */
  maxEntries?: number;
}

/**
 * The allowlist of the company registry: one GetItem per company, cached briefly. A registry item
 * that fails its schema allows nothing; its finding is logged (field paths, never values).
 */
export function registryAllowlist(registry: Pick<CompanyRegistry, 'get'>, options: RegistryAllowlistOptions): CompanyAllowlist {
  const ttlMs = options.ttlMs ?? 60_000;
  const maxEntries = options.maxEntries ?? 10_000;
  const cache = new Map<string, { allowed: boolean; until: number }>();
  return {
    async allows(companyId: string, logger?: Logger): Promise<boolean> {
      const id = companyId.toLowerCase();
      const now = options.clock.now();
      const hit = cache.get(id);
      if (hit && hit.until > now) return hit.allowed;
      let allowed: boolean;
      try {
        const company = await registry.get(id);
        allowed = company !== null && company.removedAt === undefined;
      } catch (error) {
        if (!(error instanceof RegistryItemInvalidError)) throw error;
        logger?.warn('company registry item fails its schema; not allowed', { companyId: id, issues: error.issues });
        allowed = false;
      }
      if (cache.size >= maxEntries) cache.clear();
      cache.set(id, { allowed, until: now + ttlMs });
      return allowed;
    },
  };
}

/** A fixed allowlist (tests, and callers that already hold the list). */
export function fixedAllowlist(companies: Iterable<string>): CompanyAllowlist {
  const set = new Set([...companies].map((c) => c.toLowerCase()));
  return { allows: (companyId) => Promise.resolve(set.has(companyId.toLowerCase())) };
}
