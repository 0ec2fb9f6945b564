/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // The canary-secret scan of every test file's output, logs and events (docs/security.md), and the
  // removal of each file's tempDirSync directories (testApp's cdk.out among them).
  setupFilesAfterEnv: ['<rootDir>/test/helpers/canary-setup.ts', '<rootDir>/test/helpers/temp-dirs-setup.ts'],
  // The run gets a temp directory of its own, and fails if its tests leave anything in it
  // (docs/conventions.md, "Tests leave nothing in the temp directory").
  globalSetup: '<rootDir>/test/helpers/temp-dir-guard-setup.ts',
  globalTeardown: '<rootDir>/test/helpers/temp-dir-guard-teardown.ts',
  // ts-jest only transpiles: `tsc --noEmit` type-checks once, before jest runs (npm test).
  transform: {
    '^.+\\.(?:[tj]sx?|mjs)$': [
      'ts-jest',
      {
        isolatedModules: true,
        tsconfig: { allowJs: true, module: 'commonjs', moduleResolution: 'node10', ignoreDeprecations: '6.0', rootDir: '.' },
      },
    ],
  },
  // middy and hyparquet are ESM-only; jest's module system needs them transpiled to CJS.
  transformIgnorePatterns: ['/node_modules/(?!(@middy|hyparquet|hyparquet-writer)/)'],
  moduleFileExtensions: ['ts', 'js', 'mjs', 'cjs', 'json'],
  testTimeout: 60000,
  maxWorkers: 2,
};
