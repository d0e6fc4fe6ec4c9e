import type { EventEnvelope } from '../event-store/envelope';

/**
 * What the projector announces after each pass that applied something (on `keys.projectionProgress`): the
 * version every aggregate of the batch has reached in that projection. Reads that wait for their
 * caller's own write (ADR 0019) are woken by it instead of polling the projection.
 *
 * The message is `<aggregateId>:<version>` pairs joined by `,`: aggregate ids are lower-case GUIDs,
 * so neither separator can occur in one, and a batch of 200 events stays a few kilobytes.
 */
export type ProjectedVersions = ReadonlyMap<string, number>;

/** The highest version of each aggregate among `events` (the batch's, in log order). */
export function projectedVersionsOf(events: readonly EventEnvelope[]): ProjectedVersions {
  const versions = new Map<string, number>();
  for (const { aggregateId, version } of events) {
    versions.set(aggregateId, Math.max(version, versions.get(aggregateId) ?? 0));
  }
  return versions;
}

export function encodeProjectedVersions(versions: ProjectedVersions): string {
  return [...versions].map(([aggregateId, version]) => `${aggregateId}:${version}`).join(',');
}

/** The pairs of a message; a malformed pair is skipped (a waiter then only waits longer). */
export function decodeProjectedVersions(message: string): ProjectedVersions {
  const versions = new Map<string, number>();
  for (const pair of message.split(',')) {
    const separator = pair.lastIndexOf(':');
    const version = Number(pair.slice(separator + 1));
    if (separator > 0 && Number.isSafeInteger(version)) versions.set(pair.slice(0, separator), version);
  }
  return versions;
}
