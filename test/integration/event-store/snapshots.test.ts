import { randomUUID } from 'node:crypto';

import { rebuildSnapshots } from '../../../scripts/lib/rebuild-snapshots';
import { fold } from '../../../shared/event-store/decider';
import { STATE_VERSION_FIELD } from '../../../shared/event-store/event-store';
import { fantasyTeamDecider } from '../../../shared/fantasy-team/fantasy-team.decider';
import type { FantasyTeamEvent } from '../../../shared/fantasy-team/fantasy-team.events';
import { SCRIPT_CODES } from '../../../shared/redis/script-codes';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { runTeamCommand } from '../../helpers/projector-fixtures';

const TEAM = fantasyTeamDecider.aggregateType;
const OWNER = '11111111-1111-4111-8111-111111111111';
/** What an older shape of the state might have looked like: nothing the decider knows. */
const OLD_SHAPE = JSON.stringify({ teamName: 'Old', linked: true });

/**
 * Snapshots (the folded `state` in an aggregate's record) carry the shape version of their
 * decider's state. A record of another version is never used as it is: loading folds the state
 * again from the stream, and `npm run snapshots:rebuild` (rebuildSnapshots) rewrites it.
 */
describe('Snapshot shape versions', () => {
  let subject: TestApp;
  beforeEach(async () => {
    subject = await createTestApp();
  });
  afterEach(() => subject.close());

  const recordKey = (teamId: string) => subject.services.keys.aggregateRecord(TEAM, teamId);
  async function createLinkedTeam(): Promise<string> {
    const teamId = randomUUID();
    const { commands } = subject.services;
    await runTeamCommand(
      commands,
      teamId,
      { type: 'CreateFantasyTeam', data: { name: 'Snap', season: '2026' } },
      OWNER,
    );
    await runTeamCommand(
      commands,
      teamId,
      { type: 'LinkFantasyTeam', data: { fantasyTeamExternalId: 3, fantasyUserId: 4 } },
      OWNER,
    );
    return teamId;
  }
  /** The state folded from the stream as it is now. */
  async function foldedFromStream(teamId: string) {
    const events = await subject.services.store.readStream(TEAM, teamId);
    return fold(
      fantasyTeamDecider,
      events.map((event) => ({ type: event.eventType, data: event.data }) as FantasyTeamEvent),
    );
  }
  /** Makes a record look as if written by an older shape of the state. */
  const ageRecord = (teamId: string) =>
    subject.redis.hset(recordKey(teamId), 'state', OLD_SHAPE, STATE_VERSION_FIELD, '0');

  it('When an append writes a snapshot, then the record carries the state shape version', async () => {
    const teamId = await createLinkedTeam();
    expect(await subject.redis.hget(recordKey(teamId), STATE_VERSION_FIELD)).toBe('1');
  });

  it('When a record holds another shape version, then loading folds the state from the stream instead of using it', async () => {
    const teamId = await createLinkedTeam();
    await ageRecord(teamId);

    const loaded = await subject.services.store.loadRecord(TEAM, teamId, fantasyTeamDecider.initialState);
    expect(loaded).toEqual({ version: 2, state: await foldedFromStream(teamId) });
    expect(loaded.state?.fantasyTeamExternalId).toBe(3);

    // The command path loads under the lock the same way, and its append writes the current shape.
    expect(
      await runTeamCommand(
        subject.services.commands,
        teamId,
        { type: 'UnlinkFantasyTeam', data: { unlinkReason: null } },
        OWNER,
      ),
    ).toBe(true);
    const [state, stateVersion] = await subject.redis.hmget(recordKey(teamId), 'state', STATE_VERSION_FIELD);
    expect(JSON.parse(state ?? 'null')).toEqual(await foldedFromStream(teamId));
    expect(stateVersion).toBe('1');
  });

  it('When snapshots are rebuilt, then a record of another shape is folded from its stream and its version bumped, once', async () => {
    const stale = await createLinkedTeam();
    const current = await createLinkedTeam();
    await ageRecord(stale);
    const currentBefore = await subject.redis.hgetall(recordKey(current));

    const rebuilt = await rebuildSnapshots(subject.services.store);
    expect(rebuilt.find((entry) => entry.aggregateType === TEAM)).toEqual({
      aggregateType: TEAM,
      scanned: 2,
      rewritten: 1,
    });
    const [state, stateVersion, version] = await subject.redis.hmget(
      recordKey(stale),
      'state',
      STATE_VERSION_FIELD,
      'version',
    );
    expect(JSON.parse(state ?? 'null')).toEqual(await foldedFromStream(stale));
    expect(stateVersion).toBe('1');
    expect(version).toBe('2');
    expect(await subject.redis.hgetall(recordKey(current))).toEqual(currentBefore);

    const again = await rebuildSnapshots(subject.services.store);
    expect(again.find((entry) => entry.aggregateType === TEAM)?.rewritten).toBe(0);
  });

  it('When an append moved the record past the folded version, then the rewrite is fenced and the append state kept', async () => {
    const teamId = await createLinkedTeam();
    const before = await subject.redis.hgetall(recordKey(teamId));
    // Folded at version 1, but the record is at 2.
    expect(await subject.redis.rewriteSnapshot(recordKey(teamId), 1, OLD_SHAPE, 1)).toBe(SCRIPT_CODES.FENCED);
    expect(await subject.redis.hgetall(recordKey(teamId))).toEqual(before);
  });
});
