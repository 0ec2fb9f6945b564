import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { loadStageConfig, StageConfigError } from '../lib/config/stage';
import { AcctopsStack, stackName } from '../lib/stacks/acctops-stack';

// The CDK app: `npm run synth`, or `npx cdk deploy -c stage=production`. The stage's settings come
// from cdk.json's context (lib/config/stage.ts); cdk-nag's AwsSolutions pack fails the synth on any
// finding that is not acknowledged with a reason.
const app = new App();

let stage;
try {
  stage = loadStageConfig((key) => app.node.tryGetContext(key));
} catch (error) {
  if (!(error instanceof StageConfigError)) throw error;
  console.error(error.message);
  process.exit(1);
}

new AcctopsStack(app, stackName(stage.name), {
  stage,
  env: stage.account === undefined ? undefined : { account: stage.account, region: stage.region },
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
