/**
 * The sandbox's choices that its command line offers, apart from the server so that `acctops help
 * sandbox` can list the flags without loading it.
 */

/** How the sandbox writes amounts (sandbox/README.md): the `--amount-encoding` choices. */
export const AMOUNT_ENCODINGS = ['integer', 'string', 'mixed'] as const;

/** The sandbox's dialects (dialect.ts): `--dialect`. */
export const DIALECTS = ['default', 'minimal'] as const;
export type Dialect = (typeof DIALECTS)[number];
