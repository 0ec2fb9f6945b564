import type { SecretStore } from '../ports/secrets';
import { AcctopsError } from '../shared/errors';

/**
 * Which secret holds which company's key. The company secrets are found by their tags, so that
 * secrets the stack creates and secrets imported by ARN (tagged by the runbook) are found the same
 * way, by the rotation doctor, `acctops keys status` and `getApiKey` alike.
 */
export const COMPANY_KEY_TAGS = {
  /** Marks a secret as a company API key secret; value `PURPOSE_COMPANY_KEY`. */
  purpose: 'acctops:purpose',
  /** The company's `publicId`. */
  company: 'acctops:company',
  /** The stage whose stack owns the secret (`acctops-<stage>`); two stages may share an account. */
  stage: 'acctops:stage',
} as const;
export const PURPOSE_COMPANY_KEY = 'company-api-key';

export interface CompanyKeyEntry {
  companyId: string;
  /** The secret's ARN. */
  secretId: string;
  name: string;
}

export interface CompanyKeyDirectory {
  /** Every company key secret (secrets scheduled for deletion are left out). */
  list(): AsyncIterable<CompanyKeyEntry>;
  /** The secret of `companyId`; CompanyKeyNotFoundError when there is none or more than one. */
  find(companyId: string): Promise<CompanyKeyEntry>;
}

export class CompanyKeyNotFoundError extends AcctopsError {
  override readonly name: string = 'CompanyKeyNotFoundError';
  readonly companyId: string;

  constructor(companyId: string, found: number) {
    super(
      found === 0
        ? `no secret tagged ${COMPANY_KEY_TAGS.company}=${companyId} holds a company API key`
        : `${found} secrets are tagged ${COMPANY_KEY_TAGS.company}=${companyId}; exactly one may be`,
      { code: found === 0 ? 'company_key_not_found' : 'company_key_ambiguous' },
    );
    this.companyId = companyId;
  }
}

export interface TaggedKeyDirectoryOptions {
  /**
   * The stage whose secrets this directory sees. A secret tagged for another stage is never seen,
   * so two stages in one account no longer find each other's keys (and call a company ambiguous).
   * A secret without a stage tag (imported before the tag existed) is still seen, but a secret
   * tagged for this stage wins over it. Absent: every stage's secrets (the local mode has one).
   */
  stage?: string;
}

/** The directory over the secret store's tag listing. */
export function taggedKeyDirectory(
  store: Pick<SecretStore, 'listSecretsByTag'>,
  options: TaggedKeyDirectoryOptions = {},
): CompanyKeyDirectory {
  const isCompanyKey = (tags: Record<string, string>) => tags[COMPANY_KEY_TAGS.purpose] === PURPOSE_COMPANY_KEY;
  const stageOf = (tags: Record<string, string>) => tags[COMPANY_KEY_TAGS.stage];
  const visible = (tags: Record<string, string>) =>
    options.stage === undefined || stageOf(tags) === undefined || stageOf(tags) === options.stage;
  return {
    async *list() {
      for await (const secret of store.listSecretsByTag(COMPANY_KEY_TAGS.purpose, PURPOSE_COMPANY_KEY)) {
        const companyId = secret.tags[COMPANY_KEY_TAGS.company];
        if (secret.deletedAt !== undefined || !companyId || !visible(secret.tags)) continue;
        yield { companyId: companyId.toLowerCase(), secretId: secret.secretArn, name: secret.name };
      }
    },
    async find(companyId) {
      const tagged: CompanyKeyEntry[] = [];
      const untagged: CompanyKeyEntry[] = [];
      for await (const secret of store.listSecretsByTag(COMPANY_KEY_TAGS.company, companyId.toLowerCase())) {
        if (secret.deletedAt === undefined && isCompanyKey(secret.tags) && visible(secret.tags)) {
          const entry = { companyId: companyId.toLowerCase(), secretId: secret.secretArn, name: secret.name };
          (options.stage !== undefined && stageOf(secret.tags) === options.stage ? tagged : untagged).push(entry);
        }
      }
      const found = tagged.length > 0 ? tagged : untagged;
      if (found.length !== 1) throw new CompanyKeyNotFoundError(companyId, found.length);
      return found[0]!;
    },
  };
}

/**
 * The name of a company's key secret, as the stack (cdk.json companies) and `acctops keys install`
 * (run-time companies) create it. The IAM statements conditioned on the stage tag are also scoped to
 * this prefix, and the rotation doctor describes a company's secret by this name (one call, no
 * listing). An imported secret (cdk.json `existingSecretArn`) has another name and is found by tag.
 */
export function companyKeySecretName(stage: string, companyId: string): string {
  return `acctops/${stage}/company/${companyId.toLowerCase()}/api-key`;
}

/**
 * Whether `name` is the company's key secret under acctops's own name (any stage): one the stack
 * created or `acctops keys install` did, which `companies remove` may delete. Any other secret of
 * the company was imported (cdk.json `existingSecretArn`) or tagged by hand, and is not acctops's.
 */
export function isAcctopsKeySecretName(name: string, companyId: string): boolean {
  return /^acctops\/[^/]+\/company\/[^/]+\/api-key$/.test(name) && name.endsWith(`/company/${companyId.toLowerCase()}/api-key`);
}
