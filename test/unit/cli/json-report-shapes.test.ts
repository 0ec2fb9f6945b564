import type { Finding } from '../../../src/core/api-keys';
import type { ProbeResult } from '../../../src/core/health/check-health';
import type { Operations } from '../../../cli/operations/operations';
import { findingRow, probeRow } from '../../../cli/operations/shared';
import type { SandboxDescription } from '../../../sandbox/cli';

/**
 * README, "Global options": in --json output "an absent value is `null`, never a missing key". An
 * optional field (`?:`) is how a missing key gets into a report, so no report an Operations method
 * returns may have one: `T | null`, always set, lets the compiler hold every place that builds it.
 */

type Fn = (...args: never[]) => unknown;

/**
 * Tallies keyed by outcome (`counts` of `tokens refresh`): a key there is an outcome that occurred,
 * not a field of the report.
 */
type Tally = 'counts';

/**
 * `P.path.to.field` of every field in T that may be left out of the JSON: optional, or allowing
 * `undefined` (which `JSON.stringify` drops as well); arrays as `[]`; never when there is none.
 */
type OptionalPaths<T, P extends string> = T extends Fn
  ? never
  : T extends readonly (infer E)[]
    ? OptionalPaths<E, `${P}[]`>
    : T extends object
      ? {
          [K in keyof T & string]-?: string extends K
            ? never
            : K extends Tally
              ? never
              : | (Partial<Pick<T, K>> extends Pick<T, K> ? `${P}.${K}` : undefined extends T[K] ? `${P}.${K}` : never)
                | OptionalPaths<NonNullable<T[K]>, `${P}.${K}`>;
        }[keyof T & string]
      : never;

type OptionalReportFields = OptionalPaths<{ [M in keyof Operations]: Awaited<ReturnType<Operations[M]>> }, 'Operations'>;

/** Compiles only when the type argument is never; otherwise tsc names each path in its error. */
function noneOf<_Paths extends never>(): true {
  return true;
}

// A compile-time check, not a test (jest does not type-check): `npm test`'s typecheck fails here,
// naming each report field that may be left out: make it `T | null`.
noneOf<OptionalReportFields>();
// `acctops --json sandbox` prints the sandbox's own description, not an Operations report.
noneOf<OptionalPaths<SandboxDescription, 'SandboxDescription'>>();

describe('--json reports: every key always there, null when absent', () => {
  it("a probe from check-health's JSON answer, where absent fields are missing keys, gets them as null", () => {
    const answered = JSON.parse('[{"name":"service-reachable","ok":true,"durationMs":4}]') as ProbeResult[];
    expect(answered.map(probeRow)).toEqual([{ name: 'service-reachable', ok: true, durationMs: 4, detail: null, error: null }]);
    const failed: ProbeResult = {
      name: 'service-reachable',
      ok: false,
      durationMs: 9,
      error: { name: 'TimeoutError', message: 'no answer' },
    };
    expect(probeRow(failed)).toEqual({
      name: 'service-reachable',
      ok: false,
      durationMs: 9,
      detail: null,
      error: { name: 'TimeoutError', code: null, message: 'no answer' },
    });
  });

  it("a rotation finding from check-key-rotations' JSON answer gets apiKeyId, keyPrefix and versionId as null when it names none", () => {
    const finding: Finding = { type: 'rotation_disabled', companyId: 'c-1', secret: 's', repaired: false, detail: 'rotation is off' };
    expect(Object.keys(findingRow(finding)).sort()).toEqual([
      'apiKeyId',
      'companyId',
      'detail',
      'keyPrefix',
      'repaired',
      'secret',
      'type',
      'versionId',
    ]);
    expect(findingRow({ ...finding, keyPrefix: 'sbx_AbCdEf12' })).toMatchObject({
      apiKeyId: null,
      keyPrefix: 'sbx_AbCdEf12',
      versionId: null,
    });
  });
});
