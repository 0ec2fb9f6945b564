// The Secrets Manager emulator in a process of its own for the rotation-doctor benchmark, seeded
// with one company key secret per company (names and tags as `keys install` makes them), rotation
// on: `due` of them every 1 day, the rest every 30 days. Port 0; stops on SIGTERM.
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { startSecretsManager } from '../../sandbox/secrets-manager';
import { companyKeySecretName, COMPANY_KEY_TAGS, PURPOSE_COMPANY_KEY } from '../../src/core/api-keys';
import { mapWithConcurrency } from '../../src/core/shared/concurrency';
import { companyIdOf, LAMBDA_ARN, STAGE } from './fleet';

async function main(): Promise<void> {
  const [companies, due] = process.argv.slice(2).map(Number) as [number, number];
  const sm = await startSecretsManager({ port: 0 });
  const client = new SecretsManagerClient({
    endpoint: sm.endpoint,
    region: sm.region,
    credentials: { accessKeyId: 'AKIABENCH', secretAccessKey: 'bench-not-a-secret' },
  });
  await mapWithConcurrency(
    Array.from({ length: companies }, (_, i) => i),
    32,
    async (i) => {
      const companyId = companyIdOf(i);
      const out = await client.send(
        new CreateSecretCommand({
          Name: companyKeySecretName(STAGE, companyId),
          SecretString: JSON.stringify({ placeholder: true }),
          Tags: [
            { Key: COMPANY_KEY_TAGS.purpose, Value: PURPOSE_COMPANY_KEY },
            { Key: COMPANY_KEY_TAGS.company, Value: companyId },
            { Key: COMPANY_KEY_TAGS.stage, Value: STAGE },
          ],
        }),
      );
      // Every 100th company is due: rotation every day, against the doctor's clock a day and an hour ahead.
      sm.admin.configureRotation(out.ARN!, {
        lambdaArn: LAMBDA_ARN,
        rules: { AutomaticallyAfterDays: i % Math.round(companies / due) === 0 ? 1 : 30 },
      });
    },
  );
  client.destroy();
  sm.admin.resetStats();
  console.log(`secrets manager listening on ${sm.endpoint}`);
  process.once('SIGTERM', () => void sm.stop().then(() => process.exit(0)));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
