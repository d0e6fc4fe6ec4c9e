/**
 * The spec's examples, as OpenAPI examples. The spec shows its requests and answers as tables
 * of fields, values and messages rather than as JSON, so each feature's examples (in its
 * `*.contract.ts`) are those tables written out: every name, value and message is the spec's
 * (messages come from the modules that answer them, so an example cannot quote a text the service
 * no longer sends); ids are made up, the same ones across features. `summary` names the section.
 * A contract test validates each against its schema.
 */
export interface SpecExample {
  /** The example's key in the OpenAPI examples map. */
  readonly name: string;
  readonly summary: string;
  readonly value: unknown;
  /** Of a response example; `application/json` unless said. */
  readonly mediaType?: 'application/json' | 'application/problem+json';
}

export interface OperationExamples {
  readonly requests: readonly SpecExample[];
  /** By HTTP status. */
  readonly responses: Readonly<Record<number, readonly SpecExample[]>>;
}

/**
 * The made-up ids the examples share, so one example's team or job is another's. They are also the
 * sandbox's (`npm run seed:demo`, scripts/lib/demo-season.ts), so each request example runs as it
 * is in Swagger UI against a seeded sandbox (ADR 0017).
 */
export const EXAMPLE_IDS = {
  team: '3f2b8c1e-6d4a-4f7b-9c2e-1a5d7e9f0b3c',
  request: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
  trace: '0b5f4c3e-2d1a-4e8f-9a7b-6c5d4e3f2a1b',
  /** The requestId of the sandbox's players import. */
  seedRequest: '5e1c0a6b-2f3d-4b8e-9a7c-6d5e4f3a2b1c',
  /** An import's job id (a deployment's own ids depend on its user id key, ADR 0035). */
  importJob: 'f32cb812-1f3d-58e9-822d-21cf83af0bdf',
  webhookSubscription: 'c0ffee00-5a7d-4b0c-9e1f-2a3b4c5d6e7f',
  user: '9f8e7d6c-5b4a-5c3d-8e2f-1a0b9c8d7e6f',
  /** The service account the import examples seed and the CurrentUser example signs in as. */
  serviceAccount: 'rating-service@example.com',
} as const;
