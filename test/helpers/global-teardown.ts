/** Stops the redis-server that global-setup started (never one given through REDIS_TEST_URL). */
export default async function globalTeardown(): Promise<void> {
  await globalThis.__TEST_REDIS__?.stop();
}
