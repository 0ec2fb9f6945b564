import { GetFunctionConfigurationCommand, InvokeCommand, LambdaClient, type LambdaClientConfig } from '@aws-sdk/client-lambda';
import { AcctopsError } from '../../core/shared/errors';
import { redactString } from '../../core/shared/redact';

/**
 * The function ran and failed (Lambda's FunctionError): its error type, a redacted message, and
 * the log group holding the details when it could be read.
 */
export class FunctionInvocationError extends AcctopsError {
  override readonly name: string = 'FunctionInvocationError';
  readonly functionName: string;
  readonly errorType: string;
  readonly logGroup?: string;

  constructor(functionName: string, errorType: string, message: string, logGroup?: string) {
    super(`${functionName} failed: ${errorType}: ${redactString(message)}`, { code: 'function_failed' });
    this.functionName = functionName;
    this.errorType = errorType;
    this.logGroup = logGroup;
  }
}

/**
 * Synchronous invocation of a deployed function (Lambda Invoke, RequestResponse), the way a
 * runbook or `acctops` asks the deployment to act: the function does the work with its own role and
 * configuration, and returns its JSON result. A function error becomes a FunctionInvocationError
 * naming the function's log group, read from its configuration rather than assumed, so it is right
 * for any stack version and for a function named with `--output`.
 */
export class LambdaFunctionInvoker {
  private readonly client: LambdaClient;

  constructor(config: LambdaClient | LambdaClientConfig = {}) {
    this.client = config instanceof LambdaClient ? config : new LambdaClient(config);
  }

  async invoke<T = unknown>(functionName: string, payload: unknown): Promise<T> {
    const out = await this.client.send(
      new InvokeCommand({
        FunctionName: functionName,
        InvocationType: 'RequestResponse',
        Payload: new TextEncoder().encode(JSON.stringify(payload)),
      }),
    );
    const text = out.Payload ? new TextDecoder().decode(out.Payload) : '';
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (out.FunctionError) {
      const error = (body ?? {}) as { errorType?: unknown; errorMessage?: unknown };
      throw new FunctionInvocationError(
        functionName,
        typeof error.errorType === 'string' ? error.errorType : out.FunctionError,
        typeof error.errorMessage === 'string' ? error.errorMessage : 'no error message',
        await this.logGroupOf(functionName),
      );
    }
    return body as T;
  }

  /**
   * The function's log group (GetFunctionConfiguration's LoggingConfig), or undefined when it
   * cannot be read (e.g. lambda:GetFunctionConfiguration not granted): it only ever completes a
   * hint, so its failure must not replace the error being reported.
   */
  async logGroupOf(functionName: string): Promise<string | undefined> {
    try {
      const out = await this.client.send(new GetFunctionConfigurationCommand({ FunctionName: functionName }));
      return out.LoggingConfig?.LogGroup;
    } catch {
      return undefined;
    }
  }
}
