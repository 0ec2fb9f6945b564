import {
  CreateSecretCommand,
  DescribeSecretCommand,
  InvalidNextTokenException,
  ListSecretsCommand,
  type ListSecretsCommandInput,
  paginateListSecrets,
  type SecretsManagerClient,
  TagResourceCommand,
  UntagResourceCommand,
} from '@aws-sdk/client-secrets-manager';
import { ManualClock } from '../../../src/core/shared/clock';
import { client, type RunningSecretsManager, startSecretsManager } from '../../helpers/secrets-manager';

describe('Secrets Manager emulator: ListSecrets filters, pagination and tags', () => {
  let sm: RunningSecretsManager;
  let sdk: SecretsManagerClient;

  beforeAll(async () => {
    sm = await startSecretsManager({ clock: new ManualClock() });
    sdk = client(sm);
    const secrets: [string, Record<string, string>][] = [
      ['acctops/company/alpha', { 'acctops:company': 'c-alpha', 'acctops:kind': 'api-key' }],
      ['acctops/company/beta', { 'acctops:company': 'c-beta', 'acctops:kind': 'api-key' }],
      ['acctops/company/gamma', { 'acctops:company': 'c-gamma', 'acctops:kind': 'api-key', retired: 'yes' }],
      ['acctops/institution', { 'acctops:kind': 'institution' }],
      ['Acctops/upper', {}],
    ];
    for (const [Name, tags] of secrets) {
      await sdk.send(
        new CreateSecretCommand({ Name, SecretString: 'x', Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })) }),
      );
    }
  });
  afterAll(async () => {
    sdk.destroy();
    await sm.stop();
  });

  const names = async (input: ListSecretsCommandInput) => {
    const out: string[] = [];
    for await (const page of paginateListSecrets({ client: sdk }, input)) out.push(...(page.SecretList ?? []).map((s) => s.Name!));
    return out;
  };

  it('filters by name prefix, case-sensitively', async () => {
    expect(await names({ Filters: [{ Key: 'name', Values: ['acctops/company/'] }] })).toEqual([
      'acctops/company/alpha',
      'acctops/company/beta',
      'acctops/company/gamma',
    ]);
    expect(await names({ Filters: [{ Key: 'name', Values: ['Acctops'] }] })).toEqual(['Acctops/upper']);
  });

  it('filters by tag key and tag value; several filters must all match, values of one filter are alternatives', async () => {
    expect(await names({ Filters: [{ Key: 'tag-key', Values: ['retired'] }] })).toEqual(['acctops/company/gamma']);
    expect(
      await names({
        Filters: [
          { Key: 'tag-key', Values: ['acctops:company'] },
          { Key: 'tag-value', Values: ['c-alpha', 'c-beta'] },
        ],
      }),
    ).toEqual(['acctops/company/alpha', 'acctops/company/beta']);
    // Prefix match on values, as the API reference says.
    expect(await names({ Filters: [{ Key: 'tag-value', Values: ['institution'] }] })).toEqual(['acctops/institution']);
    expect(await names({ Filters: [{ Key: 'tag-value', Values: ['c-'] }] })).toHaveLength(3);
  });

  it('a leading "!" negates a filter value', async () => {
    expect(
      await names({
        Filters: [
          { Key: 'tag-value', Values: ['api-key'] },
          { Key: 'tag-key', Values: ['!retired'] },
        ],
      }),
    ).toEqual(['acctops/company/alpha', 'acctops/company/beta']);
  });

  it('pages with MaxResults and NextToken, in creation order, both ways', async () => {
    const first = await sdk.send(new ListSecretsCommand({ MaxResults: 2 }));
    expect(first.SecretList?.map((s) => s.Name)).toEqual(['acctops/company/alpha', 'acctops/company/beta']);
    expect(first.NextToken).toEqual(expect.any(String));
    expect(await names({ MaxResults: 2 })).toEqual([
      'acctops/company/alpha',
      'acctops/company/beta',
      'acctops/company/gamma',
      'acctops/institution',
      'Acctops/upper',
    ]);
    expect((await names({ MaxResults: 3, SortOrder: 'desc' }))[0]).toBe('Acctops/upper');
    const last = await sdk.send(new ListSecretsCommand({ MaxResults: 5 }));
    expect(last.NextToken).toBeUndefined();
  });

  it('a page boundary survives a secret created between pages', async () => {
    const first = await sdk.send(new ListSecretsCommand({ MaxResults: 3, Filters: [{ Key: 'name', Values: ['acctops/'] }] }));
    await sdk.send(new CreateSecretCommand({ Name: 'acctops/late', SecretString: 'x' }));
    const second = await sdk.send(
      new ListSecretsCommand({ MaxResults: 3, NextToken: first.NextToken, Filters: [{ Key: 'name', Values: ['acctops/'] }] }),
    );
    expect(second.SecretList?.map((s) => s.Name)).toEqual(['acctops/institution', 'acctops/late']);
  });

  it('an invalid NextToken is InvalidNextTokenException', async () => {
    await expect(sdk.send(new ListSecretsCommand({ NextToken: 'not-a-token' }))).rejects.toBeInstanceOf(InvalidNextTokenException);
  });

  it('list entries carry tags and versions to stages', async () => {
    const list = await sdk.send(new ListSecretsCommand({ Filters: [{ Key: 'name', Values: ['acctops/institution'] }] }));
    const entry = list.SecretList?.[0];
    expect(entry?.Tags).toEqual([{ Key: 'acctops:kind', Value: 'institution' }]);
    expect(Object.values(entry?.SecretVersionsToStages ?? {})).toEqual([['AWSCURRENT']]);
  });

  it('TagResource adds or overwrites tags and UntagResource removes them', async () => {
    const name = 'acctops/company/alpha';
    await sdk.send(
      new TagResourceCommand({
        SecretId: name,
        Tags: [
          { Key: 'acctops:kind', Value: 'api-key-v2' },
          { Key: 'owner', Value: 'ops' },
        ],
      }),
    );
    await sdk.send(new UntagResourceCommand({ SecretId: name, TagKeys: ['acctops:company'] }));
    expect((await sdk.send(new DescribeSecretCommand({ SecretId: name }))).Tags).toEqual([
      { Key: 'acctops:kind', Value: 'api-key-v2' },
      { Key: 'owner', Value: 'ops' },
    ]);
  });
});
