// Lint config. The `no-restricted-imports` blocks enforce the layer rules of docs/architecture.md:
// dependencies point inward, src/core stays free of AWS, Lambda and middy, and only tests, bench
// and the CLI may reach the sandbox. contract/ is the innermost layer: every layer may import it,
// and it imports nothing but its own files.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const outerLayers = (...names) => names.map((n) => `**/${n}/**`).concat(names.map((n) => `**/${n}`));
const sdk = ['@aws-sdk/*', '@smithy/*'];
// Anchored: a bare 'aws-lambda' would also match aws-cdk-lib/aws-lambda, which lib needs.
const lambda = ['@middy/*', '/aws-lambda'];
const cdk = ['aws-cdk-lib', 'aws-cdk-lib/*', 'constructs', 'cdk-nag'];
// Powertools for AWS Lambda is the Lambda runtime's logger and metrics: it sits behind our Logger
// and Metrics ports in functions/_shared (docs/observability.md); nothing else imports it.
const powertools = ['@aws-lambda-powertools/*'];

// The folders with a barrel (index.ts): outside them, code imports the folder, not a file in it
// (docs/conventions.md, "Barrels"). Tests and bench may reach inside: they test the modules.
const barrel = {
  group: ['**/accounting-api/*', '**/api-keys/*'],
  message: 'import the folder (its index.ts is the public surface), not a file inside it.',
};

const restrict = (files, patterns, message) => ({
  files,
  rules: { 'no-restricted-imports': ['error', { patterns: [{ group: patterns, message }, barrel] }] },
});

// `import { z }` takes zod's namespace as a value, which esbuild cannot tree-shake: every bundle
// carried all of zod's locales (half of a 540 KB Lambda bundle; 400 of the CLI's 1,370 KB).
const zodNamespaceImport = {
  selector: "ImportDeclaration[source.value='zod'] > ImportSpecifier[imported.name='z']",
  message: "Use `import * as z from 'zod'`: esbuild then drops what we do not use, such as zod's locales (BENCHMARKS.md, cold start).",
};

export default tseslint.config(
  { ignores: ['node_modules/', 'cdk.out/', 'coverage/', '.acctops/', '.bench-out/', '**/*.js', '**/*.cjs', '**/*.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // Type-aware: a promise nobody awaits loses its rejection (an export that "finished" while its
    // upload failed), and a promise where a callback's boolean is expected is always truthy.
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'no-console': 'error',
      eqeqeq: ['error', 'smart'],
    },
  },
  {
    // The facts lib and src share (docs/infrastructure-notes.md): no package, no Node, no other layer.
    files: ['contract/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(?!\\./[^/]+$)', message: 'contract/ is dependency-free: it imports only its own files (./name).' }] },
      ],
    },
  },
  restrict(
    ['src/core/**/*.ts'],
    [...outerLayers('adapters', 'functions', 'lib', 'bin', 'sandbox', 'test', 'bench'), ...sdk, ...lambda, ...cdk, ...powertools],
    'src/core is domain logic: no AWS SDK, Lambda, middy, Powertools, CDK, adapters or outer layers.',
  ),
  // A later block replaces the rule's options for its files, so this one repeats src/core's.
  restrict(
    ['src/core/exports/formats/**/*.ts'],
    [...outerLayers('adapters', 'functions', 'lib', 'bin', 'sandbox', 'test', 'bench'), ...sdk, ...lambda, ...cdk, '**/pipeline/*'],
    'src/core/exports/formats is what one period is and how it is written: no AWS, Lambda or outer layers, and no pipeline/ (the pipeline uses formats, never the reverse).',
  ),
  restrict(
    ['src/adapters/local/**/*.ts'],
    [...outerLayers('functions', 'lib', 'bin', 'sandbox', 'test', 'bench', 'aws'), ...sdk, ...lambda, ...cdk, ...powertools],
    'local adapters use Node only; @aws-sdk lives in src/adapters/aws.',
  ),
  restrict(
    ['src/adapters/aws/**/*.ts'],
    [...outerLayers('functions', 'lib', 'bin', 'sandbox', 'test', 'bench'), ...lambda, ...cdk, ...powertools],
    'adapters implement core ports; they do not reach outer layers.',
  ),
  restrict(
    ['functions/**/*.ts'],
    [...outerLayers('lib', 'bin', 'sandbox', 'test', 'bench'), ...sdk, ...cdk, ...powertools],
    'handlers parse the event and call src; AWS clients come from src/adapters/aws; Powertools sits behind the ports in functions/_shared.',
  ),
  restrict(
    ['functions/_shared/**/*.ts'],
    [...outerLayers('lib', 'bin', 'sandbox', 'test', 'bench'), ...sdk, ...cdk],
    'functions/_shared builds the Lambda entry points (middy, Powertools); AWS clients come from src/adapters/aws.',
  ),
  restrict(
    ['lib/**/*.ts'],
    [...outerLayers('functions', 'sandbox', 'src', 'test', 'bench'), ...sdk, ...lambda, ...powertools],
    'lib is infrastructure only and refers to handlers by their entry path.',
  ),
  restrict(
    ['sandbox/**/*.ts'],
    [...outerLayers('functions', 'lib', 'bin', 'adapters', 'test', 'bench'), ...sdk, ...lambda, ...cdk, ...powertools],
    'the sandbox simulates the service; it may share src/core schemas and nothing else.',
  ),
  {
    // Code that ends up in a Lambda bundle.
    files: ['src/**/*.ts', 'functions/**/*.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        zodNamespaceImport,
        {
          // A schema built at module load costs every function that bundles the module, whether or
          // not its path parses with it (src/core/shared/lazy-schema.ts, decision 43). The environment is
          // parsed at load anyway (readEnv), so its schema may be built there.
          selector:
            ":matches(Program > VariableDeclaration, Program > ExportNamedDeclaration > VariableDeclaration) > VariableDeclarator > CallExpression.init:not([callee.name=/^(lazySchema|readEnv)$/]) MemberExpression[object.name='z']",
          message: 'Build a module-level zod schema with `lazySchema(() => …)`, so that loading the module builds nothing.',
        },
      ],
    },
  },
  {
    // The client's response schemas stay eager: every function that calls the service parses with
    // them on its first invocation anyway, and built lazily they cost an export ~7% more CPU than
    // built at load (interleaved A/B in BENCHMARKS.md, "Cold start"; decision 43).
    files: ['src/core/accounting-api/schemas.ts', 'src/core/accounting-api/money.ts'],
    rules: { 'no-restricted-syntax': ['error', zodNamespaceImport] },
  },
  // Bundled too: the CLI into dist/acctops.cjs, with the sandbox's emulators and lib's stage config.
  {
    files: ['cli/**/*.ts', 'sandbox/**/*.ts', 'lib/**/*.ts', 'bin/**/*.ts'],
    rules: { 'no-restricted-syntax': ['error', zodNamespaceImport] },
  },
  restrict(
    ['cli/**/*.ts'],
    [...outerLayers('lib', 'functions', 'test', 'bench'), ...sdk, ...lambda, ...cdk, ...powertools],
    'the CLI composes src (AWS through src/adapters/aws) and the sandbox; it never reaches lib or functions.',
  ),
  { files: ['bin/**/*.ts', 'bench/**/*.ts', 'sandbox/cli.ts'], rules: { 'no-console': 'off' } },
  {
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'off', 'no-console': 'off' },
  },
);
