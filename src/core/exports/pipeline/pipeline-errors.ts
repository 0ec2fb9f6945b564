import { AcctopsError, issuesText, type FieldIssue } from '../../shared/errors';

/**
 * A list the export read ended with a different number of items than its pages announced (or the
 * count changed between pages: the list moved under the export). An export must be exact, so the
 * client's `count_mismatch` warning is turned into this failure; a later attempt reads afresh.
 */
export class ExportCountMismatchError extends AcctopsError {
  override readonly name: string = 'ExportCountMismatchError';
  readonly request: string;
  readonly counts: readonly number[];
  readonly itemsRead: number;

  constructor(warning: { request: string; counts: readonly number[]; itemsRead: number }) {
    super(`${warning.request}: pages announced ${warning.counts.join(' then ')} items, ${warning.itemsRead} were read`, {
      code: 'export_count_mismatch',
    });
    this.request = warning.request;
    this.counts = [...warning.counts];
    this.itemsRead = warning.itemsRead;
  }
}

/**
 * The company registry says the company was removed (`acctops companies remove`): it is not
 * exported, whoever asked (an ExportRequested from any producer, a job queued before the removal).
 * Its key may still be found (a secret the stack imports outlives the removal). Not retried.
 */
export class CompanyRemovedExportError extends AcctopsError {
  override readonly name: string = 'CompanyRemovedExportError';
  readonly companyId: string;
  readonly removedAt: string;

  constructor(companyId: string, removedAt: string) {
    super(
      `company ${companyId} was removed on ${removedAt}: it is not exported (\`acctops companies restore --company ${companyId}\` brings it back)`,
      { code: 'company_removed' },
    );
    this.companyId = companyId;
    this.removedAt = removedAt;
  }
}

/**
 * The company's registry entry fails its schema (written past the CLI): it is not exported, whoever
 * asked, since what the entry says (removed, its currency) cannot be trusted; the monthly planner
 * skips such an entry and the CLI refuses it (`company_entry_damaged`, decision 86). Names the
 * fields, never their values, and the AWS repair. Not retried: the entry does not heal by itself.
 */
export class CompanyEntryDamagedExportError extends AcctopsError {
  override readonly name: string = 'CompanyEntryDamagedExportError';
  readonly companyId: string;
  readonly issues: FieldIssue[];

  constructor(companyId: string, issues: FieldIssue[]) {
    super(
      `company ${companyId}: its company registry entry is damaged (${issuesText(issues)}); it is not exported: delete the company's item from the table of the stack output CompanyRegistryTableName, then \`acctops companies add --company ${companyId}\` registers the company again (docs/runbooks.md, "Add or remove a company")`,
      { code: 'company_entry_damaged' },
    );
    this.companyId = companyId;
    this.issues = issues;
  }
}

export type UserTokenProblem = 'not_found' | 'needs_attention' | 'revoked';

/**
 * An institution user's access token cannot be used for an export: the user is unknown to the
 * token store, or out of the refresh schedule (`needs_attention`, `revoked`). A runbook fixes it;
 * retrying the export does not.
 */
export class UserTokenUnavailableError extends AcctopsError {
  override readonly name: string = 'UserTokenUnavailableError';
  readonly externalId: string;
  readonly problem: UserTokenProblem;

  constructor(externalId: string, problem: UserTokenProblem) {
    super(problem === 'not_found' ? `user ${externalId} is not in the token store` : `the tokens of user ${externalId} are ${problem}`, {
      code: `user_token_${problem}`,
    });
    this.externalId = externalId;
    this.problem = problem;
  }
}

/** Some export jobs could not be enqueued (the queue refused entries). Names codes, never a body. */
export class ExportEnqueueError extends AcctopsError {
  override readonly name: string = 'ExportEnqueueError';
  readonly failed: number;

  constructor(message: string, failed: number, cause?: unknown) {
    super(message, { code: 'export_enqueue_failed', cause });
    this.failed = failed;
  }
}
