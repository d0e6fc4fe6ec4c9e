import type { EventEnvelope } from '../../shared/event-store/envelope';
import {
  decodeProjectedVersions,
  encodeProjectedVersions,
  projectedVersionsOf,
} from '../../shared/projections/projection-progress';

const TEAM_A = '7c9e6679-7425-40de-944b-e07fc1f90ae7';
const TEAM_B = '0b2d1c7e-4e0a-4d5f-9a51-3f1b8e2c6d4a';

const event = (aggregateId: string, version: number) => ({ aggregateId, version }) as EventEnvelope;

describe('projection progress announcements', () => {
  it('When a batch holds several events of one aggregate, then the announcement names its highest version once', () => {
    const versions = projectedVersionsOf([event(TEAM_A, 3), event(TEAM_B, 1), event(TEAM_A, 4)]);
    expect([...versions]).toEqual([
      [TEAM_A, 4],
      [TEAM_B, 1],
    ]);
  });

  it('When an announcement is decoded, then it gives back what was encoded, and a malformed pair is skipped', () => {
    const versions = new Map([
      [TEAM_A, 4],
      [TEAM_B, 12],
    ]);
    expect(decodeProjectedVersions(encodeProjectedVersions(versions))).toEqual(versions);
    expect(decodeProjectedVersions(`${TEAM_A}:x,:3,${TEAM_B}:2`)).toEqual(new Map([[TEAM_B, 2]]));
  });
});
