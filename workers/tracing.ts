import { startTracing } from '../shared/tracing/tracing';

// Imported first by main.ts: the SDK, when on, is registered before anything asks for a tracer.
startTracing('worker');
