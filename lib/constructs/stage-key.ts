import { Stack } from 'aws-cdk-lib';
import type { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Key, type IKey, type KeyProps } from 'aws-cdk-lib/aws-kms';
import type { Construct } from 'constructs';
import type { StageConfig } from '../config/stage';

/** The id, under the stack, of the stage's supplied key (`kmsKeyArn`): imported once, shared by every purpose. */
const SUPPLIED_KEY_ID = 'SuppliedKmsKey';

/**
 * The stage's own key (`kmsKeyArn`) when it names one, else undefined: the stack then makes a key
 * per purpose. Imported once per stack, by ARN only, so synth makes no call to AWS.
 */
export function suppliedKey(scope: Construct, stage: StageConfig): IKey | undefined {
  if (stage.kmsKeyArn === undefined) return undefined;
  const stack = Stack.of(scope);
  return (stack.node.tryFindChild(SUPPLIED_KEY_ID) as IKey | undefined) ?? Key.fromKeyArn(stack, SUPPLIED_KEY_ID, stage.kmsKeyArn);
}

/**
 * The key of one purpose (secrets, tokens, exports, …): the stage's supplied key, or a key the
 * construct creates with `props`, as before. A supplied key gets no alias: its owner names it.
 */
export function stageKey(scope: Construct, id: string, stage: StageConfig, props: KeyProps): IKey {
  return suppliedKey(scope, stage) ?? new Key(scope, id, props);
}

/**
 * Adds `statement` to the key's policy when the stack owns the key. A supplied key's policy is its
 * owner's (CDK drops such a statement without a word): docs/infrastructure.md, "Bring your own key",
 * lists every statement this would have added, for the owner to add.
 */
export function allowOnOwnKey(key: IKey, statement: PolicyStatement): void {
  if (key instanceof Key) key.addToResourcePolicy(statement);
}
