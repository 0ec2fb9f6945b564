import { createHash } from 'node:crypto';
import type { CfnElement, Stack } from 'aws-cdk-lib';
import { Construct } from 'constructs';

/**
 * A construct that groups resources for the reader, and is left out of their CloudFormation
 * logical ids: AcctopsStack hashes an element's path without its groupings, so moving deployed
 * resources into a grouping (as Exports did with its storage, webhook and catalog) does not make
 * CloudFormation replace a bucket or a table. Only CDK's logical ids see through a grouping: ids
 * that CDK builds from a construct's path itself (`Names.nodeUniqueId`, e.g. an SQS event source
 * mapping named after its queue) still change, so keep such pairs out of groupings or check the
 * template diff.
 */
export class Grouping extends Construct {}

/**
 * The logical id of `element` as if its groupings were not in its path; undefined when it is in
 * none (then the stack's own allocation applies, unchanged).
 */
export function logicalIdOutsideGroupings(stack: Stack, element: CfnElement): string | undefined {
  const scopes = element.node.scopes;
  const path = scopes.slice(scopes.indexOf(stack) + 1);
  if (!path.some((scope) => scope instanceof Grouping)) return undefined;
  return uniqueId(path.filter((scope) => !(scope instanceof Grouping)).map((scope) => scope.node.id));
}

// CDK's allocation (makeUniqueId in aws-cdk-lib/core/lib/private/uniqueid, not exported): the
// path without `Default`, a readable prefix without `Resource` and repeats, and 8 hex digits of
// the MD5 of the whole path. test/infra/grouping.test.ts compares this with CDK's own ids.
const HIDDEN_ID = 'Default';
const HIDDEN_FROM_HUMAN_ID = 'Resource';

function uniqueId(components: string[]): string {
  const path = components.filter((c) => c !== HIDDEN_ID);
  if (path.length === 1) {
    const only = alphanumeric(path[0]!);
    if (only.length <= 255) return only;
  }
  const hash = createHash('md5').update(path.join('/')).digest('hex').slice(0, 8).toUpperCase();
  const kept: string[] = [];
  for (const c of path) if (kept.length === 0 || !kept[kept.length - 1]!.endsWith(c)) kept.push(c);
  const human = kept
    .filter((c) => c !== HIDDEN_FROM_HUMAN_ID)
    .map(alphanumeric)
    .join('')
    .slice(0, 240);
  return human + hash;
}

function alphanumeric(s: string): string {
  return s.replace(/[^A-Za-z0-9]/g, '');
}
