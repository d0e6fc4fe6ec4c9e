import { startTracing } from '../shared/tracing/tracing';

// Imported first by main.ts: the SDK, when on, must patch http and winston before they load.
startTracing('worker');
