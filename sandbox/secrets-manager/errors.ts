/**
 * An error the emulator returns on the wire, shaped the way awsJson1.1 services answer:
 * `{"__type": "<ErrorName>", "message": "..."}`. The SDK turns `__type` into its typed exception
 * classes (ResourceNotFoundException, InvalidRequestException, ...).
 */
export class EmulatedServiceError extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly status = 400,
    cause?: unknown,
  ) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'EmulatedServiceError';
  }
}

export const secretNotFound = (): EmulatedServiceError =>
  new EmulatedServiceError('ResourceNotFoundException', "Secrets Manager can't find the specified secret.");

export const valueNotFound = (what: string): EmulatedServiceError =>
  new EmulatedServiceError('ResourceNotFoundException', `Secrets Manager can't find the specified secret value for ${what}.`);

export const invalidParameter = (message: string): EmulatedServiceError => new EmulatedServiceError('InvalidParameterException', message);

export const invalidRequest = (message: string): EmulatedServiceError => new EmulatedServiceError('InvalidRequestException', message);

export const resourceExists = (message: string): EmulatedServiceError => new EmulatedServiceError('ResourceExistsException', message);

export const markedForDeletion = (): EmulatedServiceError =>
  invalidRequest("You can't perform this operation on the secret because it was marked for deletion.");
