import { Command, InvalidArgumentError } from 'commander';
import { AMOUNT_ENCODINGS, DIALECTS, type Dialect } from './choices';

/**
 * The sandbox's flags (`npm run sandbox`, `acctops sandbox`), apart from the server: `acctops help
 * sandbox` prints them without loading it. sandbox/cli.ts parses them and starts the sandbox.
 */

function integer(min: number, max: number) {
  return (raw: string): number => {
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || value < min || value > max) throw new InvalidArgumentError(`expected an integer from ${min} to ${max}`);
    return value;
  };
}

function positiveNumber(raw: string): number {
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new InvalidArgumentError('expected a positive number');
  return value;
}

function amountEncoding(raw: string): (typeof AMOUNT_ENCODINGS)[number] {
  if (!(AMOUNT_ENCODINGS as readonly string[]).includes(raw))
    throw new InvalidArgumentError(`expected one of ${AMOUNT_ENCODINGS.join(', ')}`);
  return raw as (typeof AMOUNT_ENCODINGS)[number];
}

/** Any word: a number seeds as that number, anything else as its text. Empty, it would be a seed nobody asked for. */
function seed(raw: string): string {
  const value = raw.trim();
  if (value === '') throw new InvalidArgumentError('expected a non-empty seed, e.g. 1');
  // A number the sandbox cannot hold exactly failed its options' schema after parsing: exit 1, with
  // neither the flag nor what it takes named.
  if (/^\d+$/.test(value) && !Number.isSafeInteger(Number(value)))
    throw new InvalidArgumentError(`expected a whole number up to ${Number.MAX_SAFE_INTEGER}, or a word`);
  return value;
}

function dialect(raw: string): Dialect {
  if (!(DIALECTS as readonly string[]).includes(raw)) throw new InvalidArgumentError(`expected one of ${DIALECTS.join(', ')}`);
  return raw as Dialect;
}

export function sandboxCommand(): Command {
  return new Command('sandbox')
    .description('Run the local Accounting API sandbox (sandbox-only demo data and credentials).')
    .option('--port <port>', 'port on 127.0.0.1 (0 picks a free one)', integer(0, 65_535), 4010)
    .option('--seed <seed>', 'seed of the demo data and of everything generated (credentials are random)', seed, '1')
    .option('--no-demo', 'start empty, without the demo dataset')
    .option('--amount-encoding <encoding>', 'integer, string or mixed', amountEncoding, 'integer')
    .option('--display-labels', 'send display labels (Expense, Draft) for some records')
    .option('--rate-limit <rps>', 'token bucket per credential, requests per second', positiveNumber)
    .option('--latency <ms>', 'real milliseconds added to every API request', integer(0, 60_000), 0)
    .option(
      '--dialect <dialect>',
      'default, or minimal: only what the spec promises, in DRF shapes (docs/assumptions.md)',
      dialect,
      'default',
    )
    .option('--show-credentials', 'print the demo credentials in full (by default: key prefixes, institution secret hidden)')
    .option('-v, --verbose', 'log every request as a JSON line');
}
