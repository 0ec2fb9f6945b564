import { Command } from 'commander';
import { parseInstitutionCredential } from '../../src/core/credentials/institution-credential';
import { issuesText, ValidationError } from '../../src/core/shared/errors';
import { CliConfigError, CliError, readSecretCommand } from '../errors';
import { ExitCode } from '../exit-codes';
import type { Session } from '../session';
import type { CommandHost } from './host';

/**
 * Putting credentials into the secret store, from the environment only: the runbooks "Change the
 * institution secret" and "Install a company API key" (docs/runbooks.md). The stores and checks are
 * the operations' (cli/operations/secret-changes.ts).
 */

export function required(session: Session, name: 'ACCTOPS_INSTITUTION' | 'ACCTOPS_API_KEY', what: string): string {
  const value = session.env[name]?.trim();
  if (!value)
    throw new CliConfigError(
      `${what} is read from ${name}, which is not set or empty`,
      `put it there without echo or shell history: ${readSecretCommand(name)}; never as a flag, which the history keeps`,
    );
  return value;
}

/** The client's 401 and 403 classes, as a failed probe names them. */
const REFUSED = /^(Authentication|PermissionDenied|KeyExpired|KeyRevoked|CreatorDisabled|CompanyAccessRemoved)Error$/;

export function institutionCommand(host: CommandHost): Command {
  const institution = new Command('institution').description('The institution credential in the secret store.');
  institution
    .command('set-secret')
    .description(
      'Store the institution credential from ACCTOPS_INSTITUTION (<id>:<secret> or JSON) as the new current version, then check it.',
    )
    .option('--rollback', 'instead, make the previous version current again')
    .action(
      host.run(async (session, opts: { rollback?: boolean }) => {
        const value = opts.rollback ? undefined : required(session, 'ACCTOPS_INSTITUTION', 'the institution credential');
        if (value !== undefined) {
          try {
            parseInstitutionCredential(value);
          } catch (error) {
            const detail = error instanceof ValidationError ? issuesText(error.issues) : 'malformed';
            throw new CliConfigError(
              `ACCTOPS_INSTITUTION is not an institution credential (${detail})`,
              'set it to <institution_id>:<secret_key> or {"institutionId": …, "secretKey": …}',
            );
          }
        }
        const report = await (await session.operations()).setInstitutionSecret(value);
        session.out.result(report, () => {
          session.out.line(
            report.alreadyRolledBack
              ? `Already rolled back ${report.secret}: version ${report.versionId} is current, restored by a rollback from version ${report.previousVersionId}; nothing changed (to make that one current again, store its value with \`acctops institution set-secret\`).`
              : `${report.rolledBack ? 'Rolled back' : 'Stored'} ${report.secret}: version ${report.versionId} is current${report.previousVersionId ? ` (was ${report.previousVersionId})` : ''}.`,
          );
          for (const p of report.probes) session.out.line(`  ${p.ok ? 'ok  ' : 'FAIL'} ${p.name}${p.error ? `: ${p.error.message}` : ''}`);
        });
        if (!report.verified) {
          // The service refusing the credential (401/403) is exit 4 like any refused credential;
          // an unreachable service or an unreadable secret stays a failure.
          const refused = report.probes.some((p) => !p.ok && REFUSED.test(p.error?.name ?? ''));
          throw new CliError(
            refused ? 'the service refused the stored institution credential' : 'the stored institution credential does not work',
            {
              code: 'institution_check_failed',
              exitCode: refused ? ExitCode.auth : ExitCode.failure,
              hint: report.alreadyRolledBack
                ? 'the value the earlier rollback restored fails too; check with the service owner'
                : report.rolledBack
                  ? 'the previous value fails too; check with the service owner'
                  : 'go back with `acctops institution set-secret --rollback`',
            },
          );
        }
      }),
    );
  return institution;
}
