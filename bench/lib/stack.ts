import { App } from 'aws-cdk-lib';
import { parseStageSettings, type StageConfig } from '../../lib/config/stage';
import { AcctopsStack } from '../../lib/stacks/acctops-stack';

export const BENCH_REGION = 'eu-central-1';
export const BENCH_ACCOUNT = '123456789012';
export const BENCH_STACK = 'acctops-bench';

export interface TemplateResource {
  Type: string;
  Properties?: {
    Code?: { S3Key?: string };
    MemorySize?: number;
    Environment?: { Variables?: Record<string, unknown> };
  };
}

export interface Template {
  Resources: Record<string, TemplateResource>;
}

/** A stage like cdk.json's, valid and offline. */
export function benchStage(): StageConfig {
  return { name: 'bench', ...parseStageSettings({ baseUrl: 'https://accounting.example.com/api/v1' }, 'stages.bench') };
}

/**
 * The real AcctopsStack, synthesized into `outdir`. With `bundle`, every function is bundled by
 * AcctopsFunction itself (what a deployment ships); without, synth takes a few seconds.
 */
export function synthBenchStack(outdir: string, bundle: boolean): Template {
  const app = new App({ outdir, context: bundle ? {} : { 'aws:cdk:bundling-stacks': [] } });
  new AcctopsStack(app, BENCH_STACK, { stage: benchStage(), env: { account: BENCH_ACCOUNT, region: BENCH_REGION } });
  return app.synth().getStackByName(BENCH_STACK).template as Template;
}

/** The Lambda functions of a template by handler directory (their ACCTOPS_FUNCTION). */
export function functionsOf(template: Template): Map<string, TemplateResource> {
  const out = new Map<string, TemplateResource>();
  for (const resource of Object.values(template.Resources)) {
    const name = resource.Properties?.Environment?.Variables?.ACCTOPS_FUNCTION;
    if (resource.Type === 'AWS::Lambda::Function' && typeof name === 'string') out.set(name, resource);
  }
  return out;
}
