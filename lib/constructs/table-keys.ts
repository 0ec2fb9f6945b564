import { AttributeType, ProjectionType, type Attribute } from 'aws-cdk-lib/aws-dynamodb';

/** A key attribute as contract/tables.ts writes it: DynamoDB's type letter. */
export interface ContractKey {
  readonly name: string;
  readonly type: 'S' | 'N' | 'B';
}

const TYPES: Record<ContractKey['type'], AttributeType> = { S: AttributeType.STRING, N: AttributeType.NUMBER, B: AttributeType.BINARY };
const PROJECTIONS: Record<'KEYS_ONLY' | 'ALL', ProjectionType> = { KEYS_ONLY: ProjectionType.KEYS_ONLY, ALL: ProjectionType.ALL };

/** A contract key as CDK's table props take it. */
export function attribute(key: ContractKey): Attribute {
  return { name: key.name, type: TYPES[key.type] };
}

export function projection(name: keyof typeof PROJECTIONS): ProjectionType {
  return PROJECTIONS[name];
}
