// Lint rules: typescript-eslint's type-checked recommendations with the noisiest rules off, and
// a fence that keeps Node built-ins and I/O libraries out of the code the workflow sandbox runs.
import { builtinModules } from 'node:module';
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

const TS_FILES = ['**/*.ts', '**/*.mts', '**/*.cts'];
const JS_FILES = ['**/*.js', '**/*.mjs', '**/*.cjs'];

// Workflows run in a deterministic sandbox: no I/O, no clocks or randomness but the SDK's. So
// does every module they import: the folders and files below, the only ones workflow code may
// import for their values (anything else only with `import type`).
const SANDBOX_FILES = [
  'src/workflows/**/*.ts',
  'src/calls/**/*.ts',
  'src/batch/**/*.ts',
  'src/throttle/**/*.ts',
  'src/contract/**/*.ts',
  'src/temporal/search-attributes.ts',
  'src/temporal/task-priority.ts',
  'src/temporal/workflow-types.ts',
];

const SANDBOX_MESSAGE = 'Code the workflow sandbox runs must stay deterministic and free of I/O.';

// Type-only imports are erased at bundling, so they stay allowed (e.g. `typeof activities`).
const WORKFLOW_FORBIDDEN_MODULES = [
  ...builtinModules.filter((name) => !name.startsWith('_')),
  'undici',
  'fastify',
  '@temporalio/client',
  '@temporalio/worker',
  '@temporalio/activity',
  '@temporalio/testing',
].map((name) => ({
  name,
  allowTypeImports: true,
  message: `${SANDBOX_MESSAGE} Do this in an activity.`,
}));

const WORKFLOW_FORBIDDEN_PATTERNS = [
  {
    group: ['node:*', 'undici/*', 'fastify/*', '@fastify/*', '@temporalio/worker/*'],
    allowTypeImports: true,
    message: `${SANDBOX_MESSAGE} Do this in an activity.`,
  },
  {
    // Relative imports of the I/O folders, from any depth under src.
    regex:
      '^(\\.\\./)+(http|activities|emulator|webhooks|cli|batch-io|store|client|worker|mcp-server|metrics|files|codec)(/.*)?$',
    allowTypeImports: true,
    message: `${SANDBOX_MESSAGE} It reaches I/O only through activities; import their types with \`import type\`.`,
  },
  {
    // The client, the worker and the configuration read files, the environment and the network.
    regex: '^(\\.\\./)+(client|client-errors|worker|config)(\\.js)?$',
    allowTypeImports: true,
    message: `${SANDBOX_MESSAGE} Import the data it needs from src/calls, src/batch or src/contract.`,
  },
  {
    regex: '^(\\.\\./)+temporal(/(?!(search-attributes|task-priority|workflow-types)\\.js$).*)?$',
    allowTypeImports: true,
    message:
      'Of src/temporal, workflow code imports only search-attributes, task-priority and workflow-types (no Node modules).',
  },
];

// Workers load the contract's schema-building modules once per workflow thread and share them
// frozen among its workflows (src/worker/bundle.ts), and a frozen zod schema cannot parse: what
// parses with those schemas runs in the client, the CLI and the activities, never in a workflow.
const SHARED_SCHEMA_PARSERS = ['validateInput', 'inputAliases', 'mcpArgumentProblems'];
const WORKFLOW_FORBIDDEN_PARSERS = [
  '../contract/index.js',
  '../contract/validate.js',
  '../contract/mcp-replies.js',
].map((name) => ({
  name,
  importNames: SHARED_SCHEMA_PARSERS,
  allowTypeImports: true,
  message:
    "Workflows share the contract's input schemas frozen (src/worker/bundle.ts): check input before the workflow starts, or in an activity.",
}));

const WORKFLOW_FORBIDDEN_GLOBALS = [
  'process',
  'Buffer',
  'require',
  '__dirname',
  '__filename',
  'setImmediate',
  'clearImmediate',
  'fetch',
  'XMLHttpRequest',
  'WebSocket',
].map((name) => ({ name, message: `${name} is not available or not deterministic in workflows.` }));

const NODE_GLOBALS = Object.fromEntries(
  [
    'process',
    'console',
    'Buffer',
    'URL',
    'URLSearchParams',
    'AbortController',
    'TextEncoder',
    'TextDecoder',
    'setTimeout',
    'clearTimeout',
    'setInterval',
    'clearInterval',
    'setImmediate',
    'queueMicrotask',
    'structuredClone',
    'fetch',
  ].map((name) => [name, 'readonly']),
);

export default defineConfig(
  globalIgnores(['node_modules/', '.tools/', '.data/', 'dist/', 'coverage/', 'out/']),
  js.configs.recommended,
  {
    files: JS_FILES,
    languageOptions: { globals: NODE_GLOBALS },
  },
  {
    files: ['**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { ...NODE_GLOBALS, require: 'readonly', exports: 'writable', module: 'writable' },
    },
  },
  {
    files: TS_FILES,
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': [
        'error',
        { checksVoidReturn: { arguments: false } },
      ],
      // Values from zod, JSON and the SDK's protos are often `any`; zod guards the boundaries.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      // Activities are async by contract even when their body does not await.
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true, allowNullish: true },
      ],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      // `expect(obj.method)` and spies pass methods around unbound on purpose.
      '@typescript-eslint/unbound-method': 'off',
    },
  },
  {
    // Functions stay short where the next engineer reads first: a workflow or an activity is a
    // few named steps, a command or a client method is wiring around them.
    files: ['src/workflows/**/*.ts', 'src/activities/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 120 }] },
  },
  {
    files: ['src/cli/**/*.ts', 'src/client/**/*.ts', 'src/client.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 150 }] },
  },
  {
    files: SANDBOX_FILES,
    rules: {
      'no-restricted-imports': 'off',
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { paths: WORKFLOW_FORBIDDEN_MODULES, patterns: WORKFLOW_FORBIDDEN_PATTERNS },
      ],
      'no-restricted-globals': ['error', ...WORKFLOW_FORBIDDEN_GLOBALS],
    },
  },
  {
    // The workflow code itself (not the contract, which defines these): no parsing with shared schemas.
    files: [
      'src/workflows/**/*.ts',
      'src/calls/**/*.ts',
      'src/batch/**/*.ts',
      'src/throttle/**/*.ts',
    ],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [...WORKFLOW_FORBIDDEN_MODULES, ...WORKFLOW_FORBIDDEN_PARSERS],
          patterns: WORKFLOW_FORBIDDEN_PATTERNS,
        },
      ],
    },
  },
  {
    // The pure files of src/temporal: their other neighbours are the Temporal CLI, the dev server
    // and the connection.
    files: [
      'src/temporal/search-attributes.ts',
      'src/temporal/task-priority.ts',
      'src/temporal/workflow-types.ts',
    ],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: WORKFLOW_FORBIDDEN_MODULES,
          patterns: [
            ...WORKFLOW_FORBIDDEN_PATTERNS,
            {
              regex: '^\\./(?!(search-attributes|task-priority|workflow-types)\\.js$)',
              allowTypeImports: true,
              message: `${SANDBOX_MESSAGE} This neighbour does I/O.`,
            },
          ],
        },
      ],
    },
  },
);
