import { InvokeCommand, LambdaClient, type LambdaClientConfig } from '@aws-sdk/client-lambda';
import { AcctopsError } from '../../core/shared/errors';
import { redactString } from '../../core/shared/redact';

/** The function ran and failed (Lambda's FunctionError): its error type and a redacted message. */
export class FunctionInvocationError extends AcctopsError {
  readonly functionName: string;
  readonly errorType: string;

  constructor(functionName: string, errorType: string, message: string) {
    super(`${functionName} failed: ${errorType}: ${redactString(message)}`, { code: 'function_failed' });
    this.functionName = functionName;
    this.errorType = errorType;
  }
}

/**
 * Synchronous invocation of a deployed function (Lambda Invoke, RequestResponse), the way a
 * runbook or `acctops` asks the deployment to act: the function does the work with its own role and
 * configuration, and returns its JSON result. A function error becomes a FunctionInvocationError.
 */
export class LambdaFunctionInvoker {
  private readonly client: LambdaClient;

  constructor(config: LambdaClient | LambdaClientConfig = {}) {
    this.client = config instanceof LambdaClient ? config : new LambdaClient(config);
  }

  async invoke<T = unknown>(functionName: string, payload: unknown): Promise<T> {
    const out = await this.client.send(
      new InvokeCommand({ FunctionName: functionName, InvocationType: 'RequestResponse', Payload: new TextEncoder().encode(JSON.stringify(payload)) }),
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
      );
    }
    return body as T;
  }
}
