import { startTracing } from '../shared/tracing/tracing';

// Imported first by main.ts: the SDK, when on, is registered before anything asks for a tracer. The
// server span is the app's own middleware (http/server-span.ts).
startTracing('ingress');
