import { App, Validations, type PolicyViolation } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { parseStageSettings, type StageConfig, type StageSettings } from '../../lib/config/stage';
import { AcctopsStack } from '../../lib/stacks/acctops-stack';
import { tempDirSync } from './temp-dirs';

/** A valid stage, `test`, with `overrides` (input form, before defaults). */
export function testStage(overrides: Record<string, unknown> = {}): StageConfig {
  const settings: StageSettings = parseStageSettings({ baseUrl: 'https://accounting.example.com/api/v1', ...overrides }, 'stages.test');
  return { name: 'test', ...settings };
}

/**
 * An app that skips esbuild (`aws:cdk:bundling-stacks: []`): infra tests look at the template, not
 * the bundle. test/infra/bundling.test.ts is the one place that bundles.
 *
 * Its outdir is given: without one, every App makes a `cdk.out*` directory under the OS temp
 * directory in its constructor (synthesized or not), and CDK removes those on the process's `exit`
 * event, which the copy of `process` jest gives each test file never emits. This one goes when the
 * test file ends (test/helpers/temp-dirs.ts).
 */
export function testApp(): App {
  return new App({ outdir: tempDirSync('acctops-cdk.out-'), context: { 'aws:cdk:bundling-stacks': [] } });
}

export function synthAcctopsStack(stageOverrides: Record<string, unknown> = {}): {
  app: App;
  stack: AcctopsStack;
  template: Template;
} {
  const app = testApp();
  const stack = new AcctopsStack(app, 'acctops-test', { stage: testStage(stageOverrides) });
  return { app, stack, template: Template.fromStack(stack) };
}

/**
 * cdk-nag AwsSolutions findings (errors and warnings) that are not acknowledged. Call after the
 * app has synthesized (Template.fromStack does), so that every lazy value is in place.
 */
export function nagViolations(scope: IConstruct): PolicyViolation[] {
  return new AwsSolutionsChecks().validateScope(scope).violations;
}

/** Readable form of violations for a failing assertion: `rule at path`. */
export function describeViolations(violations: PolicyViolation[]): string[] {
  return violations.flatMap((v) => v.violatingResources.map((r) => `${v.ruleName} at ${r.constructPath ?? r.resourceLogicalId}`));
}

export interface Acknowledgement {
  path: string;
  id: string;
  reason: string;
}

/** Every `Validations.of(x).acknowledge(...)` under `root`, with its reason. */
export function acknowledgements(root: IConstruct): Acknowledgement[] {
  return root.node.findAll().flatMap((construct) =>
    construct.node.metadata
      .filter((entry) => entry.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .flatMap((entry) =>
        Object.entries(entry.data as Record<string, string>).map(([id, reason]) => ({
          path: construct.node.path,
          // aws-cdk-lib qualifies plugin rule ids with the plugin namespace: `Annotation::<id>`.
          id: id.replace(/^annotation::/i, ''),
          reason,
        })),
      ),
  );
}

/** The IAM statements of every policy attached to `roleLogicalId`, resolved. */
export function roleStatements(template: Template, roleLogicalId: string): Record<string, unknown>[] {
  const policies = template.findResources('AWS::IAM::Policy');
  return Object.values(policies)
    .filter((p) => (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === roleLogicalId))
    .flatMap((p) => p.Properties.PolicyDocument.Statement as Record<string, unknown>[]);
}
