/**
 * `npm start` runs an ingress and a worker on one host, so they cannot both take METRICS_PORT:
 * the ingress keeps it and the worker takes the next port. Unset or 0 (no listener) stays as it is
 * for both, and a value that is not a port is passed on unchanged for each process's config
 * check to refuse with its usual message.
 */
export function workerMetricsPort(metricsPort: string | undefined): string | undefined {
  if (metricsPort === undefined || !/^\d+$/.test(metricsPort.trim())) return metricsPort;
  const port = Number(metricsPort);
  return port === 0 ? metricsPort : String(port + 1);
}
