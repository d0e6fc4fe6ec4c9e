/**
 * ts-jest in transpile-only mode (tsconfig `isolatedModules`): type errors are caught once by
 * `npm run typecheck`, so jest does not pay for a full type check of every test file.
 * @type {import('jest').Config}
 */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
    // json-schema-faker (the contract fuzzer's generator) ships as an ES module only: compiled to
    // CommonJS for jest like our own files.
    '/node_modules/json-schema-faker/.+\\.js$': [
      'ts-jest',
      { tsconfig: { allowJs: true, module: 'commonjs', target: 'ES2022', isolatedModules: true } },
    ],
  },
  transformIgnorePatterns: ['/node_modules/(?!json-schema-faker/)'],
  moduleNameMapper: { '^json-schema-faker$': '<rootDir>/node_modules/json-schema-faker/dist/index.js' },
  globalSetup: '<rootDir>/test/helpers/global-setup.ts',
  globalTeardown: '<rootDir>/test/helpers/global-teardown.ts',
  // Every response received through supertest is checked against the OpenAPI document.
  // Property tests draw from one seed per file, printed on failure (PROPERTY_SEED replays it).
  setupFilesAfterEnv: [
    '<rootDir>/test/helpers/openapi-responses.setup.ts',
    '<rootDir>/test/helpers/property-seed.setup.ts',
  ],
  // A backstop for a hung test, not a measure: integration tests that took 10-15 s alone went past
  // 30 s with two suites sharing the 2 cores (issue 39), and a test that waits on a condition
  // must be allowed a machine at half speed and slower.
  testTimeout: 120_000,
  maxWorkers: 2,
};
