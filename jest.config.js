/**
 * ts-jest in transpile-only mode (tsconfig `isolatedModules`): type errors are caught once by
 * `npm run typecheck`, so jest does not pay for a full type check of every test file.
 * @type {import('jest').Config}
 */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  globalSetup: '<rootDir>/test/helpers/global-setup.ts',
  globalTeardown: '<rootDir>/test/helpers/global-teardown.ts',
  // Every response received through supertest is checked against the OpenAPI document.
  setupFilesAfterEnv: ['<rootDir>/test/helpers/openapi-responses.setup.ts'],
  testTimeout: 30000,
  maxWorkers: 2,
};
