/** The benchmark fleet's shape, shared by its processes. */
export const STAGE = 'bench';
export const REGISTRY_TABLE = 'bench-companies';
export const LAMBDA_ARN = 'arn:aws:lambda:eu-central-1:000000000000:function:acctops-bench-rotate-api-key';
export const companyIdOf = (i: number) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
