import { startTracing } from '../shared/tracing/tracing';

// Imported first by main.ts: the SDK, when on, must patch winston before it loads (so this file
// imports nothing that loads it).
startTracing('worker');
