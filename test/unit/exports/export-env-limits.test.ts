import { AwsExportRuntime, exportRuntimeFromEnv } from '../../../src/adapters/aws/export-runtime';

/** The stage's exports.pageSize and exports.dateTo reach the worker as EXPORT_PAGE_SIZE and EXPORT_DATE_TO, checked at cold start. */
describe('export environment: page size and date_to', () => {
  const names = ['EXPORT_PAGE_SIZE', 'EXPORT_DATE_TO'] as const;

  it('reads them into the runtime, and leaves them unset when not given (the defaults: 1000, detect)', () => {
    const { runtime } = exportRuntimeFromEnv(AwsExportRuntime, names, { EXPORT_PAGE_SIZE: '200', EXPORT_DATE_TO: 'exclusive' });
    expect([runtime.config.pageSize, runtime.config.dateTo]).toEqual([200, 'exclusive']);
    const unset = exportRuntimeFromEnv(AwsExportRuntime, names, {}).runtime;
    expect([unset.config.pageSize, unset.config.dateTo]).toEqual([undefined, undefined]);
  });

  it.each([
    ['EXPORT_PAGE_SIZE', { EXPORT_PAGE_SIZE: '0' }],
    ['EXPORT_PAGE_SIZE', { EXPORT_PAGE_SIZE: '1001' }],
    ['EXPORT_DATE_TO', { EXPORT_DATE_TO: 'sometimes' }],
  ])('refuses a bad %s, naming it', (name, env) => {
    expect(() => exportRuntimeFromEnv(AwsExportRuntime, names, env)).toThrow(name);
  });
});
