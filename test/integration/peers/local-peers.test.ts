import { CreateTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import { startDynamo, type LocalDynamo } from '../../helpers/dynalite';
import { startS3, type LocalS3 } from '../../helpers/s3rver';

describe('local AWS peers', () => {
  let s3: LocalS3;
  let dynamo: LocalDynamo;
  beforeAll(async () => {
    [s3, dynamo] = await Promise.all([startS3(['peer-check']), startDynamo()]);
  });
  afterAll(async () => {
    await Promise.all([s3.stop(), dynamo.stop()]);
  });

  it('s3rver listens on an ephemeral port and stores a streamed body byte for byte', async () => {
    expect(s3.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(s3.endpoint.endsWith(':4568')).toBe(false);
    const client = s3.client();
    const body = 'line one\nline two\n';
    await client.send(
      new PutObjectCommand({ Bucket: 'peer-check', Key: 'a/b.txt', Body: Readable.from([Buffer.from(body)]), ContentLength: body.length }),
    );
    const got = await client.send(new GetObjectCommand({ Bucket: 'peer-check', Key: 'a/b.txt' }));
    // The aws-chunked framing would show up here as hex sizes and signatures around the data.
    expect(await got.Body!.transformToString()).toBe(body);
  });

  it('dynalite creates a table that is ACTIVE at once', async () => {
    const client = dynamo.client();
    await client.send(
      new CreateTableCommand({
        TableName: 'peer-check',
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      }),
    );
    const table = await client.send(new DescribeTableCommand({ TableName: 'peer-check' }));
    expect(table.Table?.TableStatus).toBe('ACTIVE');
  });
});
