import { AcctopsError } from '../../core/shared/errors';

/**
 * No region (flag, AWS_REGION or the profile), a region the SDK cannot sign for, or no credentials
 * in the default chain: found once, before any call, so that a command says so once instead of once
 * per call. `code` is `aws_region_missing`, `aws_region_malformed` or `aws_credentials_missing`; the
 * SDK's error is the cause, never printed.
 */
export class AwsSetupError extends AcctopsError {
  override readonly name: string = 'AwsSetupError';
  constructor(message: string, code: 'aws_region_missing' | 'aws_region_malformed' | 'aws_credentials_missing', cause?: unknown) {
    super(message, { code, cause });
  }
}

/**
 * The region an SDK client would sign for, resolved without calling its service. Its own module,
 * apart from OperatorClients, so that the `--out s3://` store can use it without loading every
 * client the AWS mode needs. An empty AWS_REGION resolves to '' and would fail at the first call
 * as "Region not accepted", so it counts as none.
 */
export async function configuredRegion(config: { region(): Promise<string> }): Promise<string> {
  let region: string;
  try {
    region = await config.region();
  } catch (error) {
    // The SDK refuses a region that is no hostname label ("Region not accepted: region=…"), and an
    // empty one the same way: only a non-empty one is malformed rather than missing. The CLI refuses
    // a malformed --region or AWS_REGION before this; what is left is the profile's.
    if (error instanceof Error && /^Region not accepted/.test(error.message) && !/region=""/.test(error.message)) {
      throw new AwsSetupError('the AWS region is malformed (not a region name such as eu-central-1)', 'aws_region_malformed', error);
    }
    throw new AwsSetupError('no AWS region is set', 'aws_region_missing', error);
  }
  if (!region) throw new AwsSetupError('no AWS region is set', 'aws_region_missing');
  return region;
}
