import { AsyncLocalStorage } from 'node:async_hooks';

/** What every log line written while serving one request (or running one job) carries. */
export interface RequestContext {
  readonly requestId: string;
  userId?: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** Runs `fn` with `context` visible to every log line written inside it, across awaits. */
export function runWithContext<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

export function currentContext(): RequestContext | undefined {
  return storage.getStore();
}
