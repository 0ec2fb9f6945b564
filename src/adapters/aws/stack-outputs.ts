import { CloudFormationClient, type CloudFormationClientConfig, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { AcctopsError } from '../../core/shared/errors';

/** The stack does not exist (in this account and region), or CloudFormation could not be asked. */
export class StackLookupError extends AcctopsError {
  override readonly name: string = 'StackLookupError';
  readonly stackName: string;

  constructor(message: string, options: { code: string; stackName: string; cause?: unknown }) {
    super(message, { code: options.code, cause: options.cause });
    this.stackName = options.stackName;
  }
}

/**
 * The outputs of a deployed stack (DescribeStacks), by output key: how the CLI finds the functions,
 * table and groups of `acctops-<stage>` without being told each name. Outputs hold names and ARNs,
 * never a secret.
 */
export async function readStackOutputs(
  stackName: string,
  config: CloudFormationClient | CloudFormationClientConfig = {},
): Promise<Record<string, string>> {
  const client = config instanceof CloudFormationClient ? config : new CloudFormationClient(config);
  let stacks;
  try {
    stacks = (await client.send(new DescribeStacksCommand({ StackName: stackName }))).Stacks ?? [];
  } catch (error) {
    const name = error instanceof Error ? error.name : 'Error';
    const message = error instanceof Error ? error.message : String(error);
    if (name === 'ValidationError' && /does not exist/.test(message)) {
      throw new StackLookupError(`stack ${stackName} does not exist in this account and region`, {
        code: 'stack_not_found',
        stackName,
        cause: error,
      });
    }
    // Credential errors keep their own class as the cause, so the CLI can say "check your AWS credentials".
    throw new StackLookupError(`could not describe stack ${stackName}: ${name}: ${message}`, {
      code: 'stack_lookup_failed',
      stackName,
      cause: error,
    });
  }
  const stack = stacks[0];
  if (!stack)
    throw new StackLookupError(`stack ${stackName} does not exist in this account and region`, { code: 'stack_not_found', stackName });
  const outputs: Record<string, string> = {};
  for (const output of stack.Outputs ?? [])
    if (output.OutputKey && output.OutputValue !== undefined) outputs[output.OutputKey] = output.OutputValue;
  return outputs;
}
