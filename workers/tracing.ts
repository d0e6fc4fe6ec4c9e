import { METRICS_PATH } from '../shared/metrics/metrics.routes';
import { startTracing } from '../shared/tracing/tracing';

// Imported first by main.ts: the SDK, when on, must patch http and winston before they load (so this
// file imports nothing that loads them).
startTracing('worker', { untracedPaths: [METRICS_PATH] });
