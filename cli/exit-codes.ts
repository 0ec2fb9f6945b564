/**
 * The exit codes of `acctops`, documented in the README ("Exit codes"). Scripts branch on them, so
 * they are part of the interface: never renumber one.
 */
export const ExitCode = {
  /** Done; for `doctor`, nothing found. */
  ok: 0,
  /** The operation failed (the service or a store refused, a rotation failed, an unexpected error). */
  failure: 1,
  /** Bad command line: unknown command or option, a missing or malformed argument, a credential given as a flag. */
  usage: 2,
  /** Configuration missing or wrong: an environment variable, the state directory, a stack output, a secret. */
  config: 3,
  /** A credential was refused: the service's 401/403, or AWS credentials missing or denied. */
  auth: 4,
  /** Partly done or something to look at: some users or companies failed, or `doctor` has findings. */
  partial: 5,
} as const;

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];
