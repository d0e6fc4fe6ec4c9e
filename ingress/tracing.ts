import { startTracing } from '../shared/tracing/tracing';

// Imported first by main.ts: the SDK, when on, must patch winston before it loads (so this file
// imports nothing that loads it). The server span is the app's own middleware (http/server-span.ts).
startTracing('ingress');
