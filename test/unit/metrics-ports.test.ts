import { workerMetricsPort } from '../../scripts/lib/metrics-ports';

describe('npm start metrics ports', () => {
  it('When METRICS_PORT is a port, then the worker takes the next one, so the two listeners never collide', () => {
    expect(workerMetricsPort('9464')).toBe('9465');
  });

  it('When METRICS_PORT is unset or 0, then the worker opens no listener either', () => {
    expect(workerMetricsPort(undefined)).toBeUndefined();
    expect(workerMetricsPort('0')).toBe('0');
  });

  it('When METRICS_PORT is not a port, then it is passed on for the config check to refuse', () => {
    expect(workerMetricsPort('metrics')).toBe('metrics');
  });
});
