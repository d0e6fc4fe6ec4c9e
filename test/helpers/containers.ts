import { spawn } from 'node:child_process';

import { podman, podmanEnv } from '../../scripts/image/podman';
import { type ServiceProcess, watchedProcess } from './processes';

/** A container of the service's image, run in the foreground by `podman run` (its exit is the container's). */
export interface Container extends ServiceProcess {
  readonly name: string;
}

export interface ContainerOptions {
  readonly image: string;
  readonly env: Record<string, string>;
  /** The image's CMD when absent (the ingress); `['node', 'dist/workers/main.js']` for a worker. */
  readonly command?: readonly string[];
}

let sequence = 0;

/**
 * Starts a container as an operator is told to (docs/operators.md, "Deployment"): `--init`, so that
 * node is not PID 1, and a read-only root file system with no tmpfs at all, which proves the
 * service writes nowhere. It shares the host's network, so it reaches the suite's Redis on loopback
 * and the test reaches its port.
 */
export function runContainer(options: ContainerOptions): Container {
  const name = `fts-test-${process.pid}-${++sequence}`;
  const envArgs = Object.entries(options.env).flatMap(([key, value]) => ['--env', `${key}=${value}`]);
  const child = spawn(
    'podman',
    [
      'run',
      '--rm',
      '--name',
      name,
      '--init',
      '--network',
      'host',
      '--read-only',
      '--read-only-tmpfs=false',
      ...envArgs,
      options.image,
      ...(options.command ?? []),
    ],
    { env: podmanEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  return { name, ...watchedProcess(child, `container ${name}`, 60_000) };
}

/** `podman stop`: SIGTERM, then SIGKILL after `graceSeconds`, as an orchestrator stops a container. */
export async function stopContainer(container: Container, graceSeconds = 30): Promise<void> {
  await podman(['stop', '--time', String(graceSeconds), container.name]).catch(() => undefined);
}

/** Removes containers a test started, whatever state they are in (for afterAll). */
export async function removeContainers(...containers: (Container | undefined)[]): Promise<void> {
  await Promise.all(
    containers.map(async (container) => {
      if (!container) return;
      await podman(['rm', '--force', '--time', '0', container.name]).catch(() => undefined);
      await container.exited;
    }),
  );
}
