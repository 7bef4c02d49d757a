// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import decider from './scripts/lint/appends-through-handler.mjs';

export default tseslint.config(
  // docs/examples: its types are generated from a running server's document, so
  // test/e2e/typed-client.test.ts type-checks it (tsc --strict and more) instead; so does
  // test/clients/packages.test.ts clients/typescript/examples, against the packed SDK.
  { ignores: ['dist/**', 'node_modules/**', 'data/**', '.engines/**', '.tmp/**', 'src/app/http/generated/**', 'bin/**', 'scripts/**', 'eslint.config.js', '.dependency-cruiser.cjs', 'docs/examples/**', 'clients/typescript/src/generated/**', 'clients/typescript/dist/**', 'clients/typescript/examples/**', '.venv-clients/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    // Every write goes through the command handler given a decider (docs/architecture.md,
    // "Deciders"); the handler and the store's own plumbing (leases, read-model generations, the
    // fenced and instrumented stores) are the only appenders. Tests write their fixtures directly.
    files: ['src/**/*.ts', 'commands/**/*.ts', 'queries/**/*.ts', 'projections/**/*.ts'],
    ignores: ['src/core/command-handler.ts', 'src/core/lease.ts', 'src/core/fenced-event-store.ts', 'src/core/read-model-generations.ts', 'src/app/metrics/instrumented-event-store.ts'],
    plugins: { decider },
    rules: { 'decider/appends-through-handler': 'error' },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-expressions': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
    },
  },
);
