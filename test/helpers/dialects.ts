import { DIALECTS, type Dialect } from '../../sandbox/dialect';

/**
 * The sandbox dialects every integration suite of the client runs against (issue 13):
 * `describe.each(DIALECTS)('… (%s dialect)', (dialect) => …)`, one sandbox per dialect per file.
 * `ACCTOPS_TEST_DIALECT=minimal` narrows a run to one dialect while working on it.
 */
const only = process.env.ACCTOPS_TEST_DIALECT;
export const TEST_DIALECTS: readonly Dialect[] = only !== undefined && (DIALECTS as readonly string[]).includes(only) ? [only as Dialect] : DIALECTS;

export { DIALECTS, type Dialect };
