import { METRICS_PATH } from '../shared/metrics/metrics.routes';
import { startTracing } from '../shared/tracing/tracing';
import { LIVENESS_PATH, READINESS_PATH } from './health/health.routes';

// Imported first by main.ts: the SDK, when on, must patch http, express and winston before they load
// (so this file imports nothing that loads them).
startTracing('ingress', { untracedPaths: [LIVENESS_PATH, READINESS_PATH, METRICS_PATH] });
