import { CfnResource, Stack, type CfnElement } from 'aws-cdk-lib';
import { Construct } from 'constructs';
import { Grouping, logicalIdOutsideGroupings } from '../../lib/constructs/grouping';
import { testApp } from '../helpers/cdk';

/** A stack that allocates ids as AcctopsStack does. */
class GroupingStack extends Stack {
  protected override allocateLogicalId(element: CfnElement): string {
    return logicalIdOutsideGroupings(this, element) ?? super.allocateLogicalId(element);
  }
}

// Paths that exercise CDK's rules: `Resource` left out of the readable part, `Default` left out
// of everything, repeated components, characters that are not alphanumeric, one component, and a
// path longer than the readable part may be.
const PATHS = [
  ['Exports', 'Bucket', 'Resource'],
  ['Exports', 'Default', 'Queue', 'Resource'],
  ['Exports', 'Worker', 'SqsEventSource:acctops-testExportsQueue5D0B3B29'],
  ['Tokens', 'Tokens', 'Table'],
  ['ZB', 'B', 'ZB'],
  ['Single'],
  ['Long'.repeat(40), 'Longer'.repeat(30), 'Resource'],
];

/** Builds `path` under `root`, inserting a Grouping after the first component when asked. */
function build(root: Stack, path: string[], grouped: boolean): CfnResource {
  let scope: Construct = root;
  path.slice(0, -1).forEach((id, i) => {
    scope = new Construct(scope, id);
    if (grouped && i === 0) scope = new Grouping(scope, 'Group');
  });
  const last = path[path.length - 1]!;
  if (grouped && path.length === 1) scope = new Grouping(scope, 'Group');
  return new CfnResource(scope, last, { type: 'Test::Resource' });
}

describe('Grouping', () => {
  it.each(PATHS.map((p) => [p.join('/').slice(0, 60), p] as const))(
    '%s keeps the logical id CDK gives it outside the grouping',
    (_name, path) => {
      const plain = new Stack(testApp(), 'Plain');
      const grouped = new GroupingStack(testApp(), 'Grouped');
      const expected = plain.getLogicalId(build(plain, [...path], false));
      const actual = grouped.getLogicalId(build(grouped, [...path], true));
      expect(actual).toBe(expected);
      // Without the override, the grouping would be part of the id.
      const unaware = new Stack(testApp(), 'Unaware');
      expect(unaware.getLogicalId(build(unaware, [...path], true))).not.toBe(expected);
    },
  );

  it('leaves ids outside any grouping to the stack', () => {
    const stack = new GroupingStack(testApp(), 'Grouped');
    expect(logicalIdOutsideGroupings(stack, build(stack, ['Exports', 'Bucket', 'Resource'], false))).toBeUndefined();
  });
});
