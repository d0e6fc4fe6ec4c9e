import { spawn } from 'node:child_process';
import path from 'node:path';

/** Debian's podman 4.3 runs the image tests; `.ci/run` installs it (apt-get install podman). */
export const PODMAN_MISSING =
  'podman is not installed: apt-get install podman buildah runc debootstrap (Debian), or run .ci/run, which installs them';

/** The environment podman runs with: this machine's containers.conf unless the caller names one. */
export function podmanEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const named = env.CONTAINERS_CONF;
  return { ...env, CONTAINERS_CONF: named ? path.resolve(named) : path.join(__dirname, 'containers.conf') };
}

export interface CommandResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `command` to its end without blocking the event loop (a build takes a minute); `input` is
 * piped to its stdin. Rejects only when the command cannot be started.
 */
export function run(
  command: string,
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; input?: NodeJS.ReadableStream } = {},
): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: options.env ?? process.env,
      cwd: options.cwd,
      stdio: [options.input ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    if (options.input && child.stdin) options.input.pipe(child.stdin);
    child.once('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'ENOENT' && command === 'podman' ? new Error(PODMAN_MISSING) : error),
    );
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** `podman args...`; throws with podman's own words when it fails. */
export async function podman(args: readonly string[], input?: NodeJS.ReadableStream): Promise<string> {
  const result = await run('podman', args, { env: podmanEnv(), ...(input ? { input } : {}) });
  if (result.code !== 0) {
    throw new Error(
      `podman ${args.join(' ')} exited ${result.code}: ${result.stderr.trim() || result.stdout.trim()}`,
    );
  }
  return result.stdout;
}

/**
 * Removes the build stages' unnamed images, so that repeated builds do not fill the disk. Best
 * effort: podman refuses while a container still uses one (a test's, or a build that was stopped),
 * and that must not fail the build that asked.
 */
export async function pruneUnnamedImages(): Promise<void> {
  await run('podman', ['image', 'prune', '--force'], { env: podmanEnv() });
}

/**
 * The value of `label` on the stored `image`: undefined when no such image is stored, null when it is
 * stored without that label (pulled from a registry rather than built here).
 */
export async function imageLabel(image: string, label: string): Promise<string | null | undefined> {
  const result = await run(
    'podman',
    ['image', 'inspect', '--format', `{{index .Labels "${label}"}}`, image],
    {
      env: podmanEnv(),
    },
  );
  if (result.code !== 0) return undefined;
  const value = result.stdout.trim();
  return value === '' || value === '<no value>' ? null : value;
}
