import { type DecisionContext, fold, SERVICE_ACTOR_ID } from '../../shared/event-store/decider';
import {
  type ArchiveFantasyTeam,
  type CreateFantasyTeam,
  type EraseFantasyTeamOwner,
  type FantasyTeamCommand,
  type LinkFantasyTeam,
  type RosterSlot,
  SELECTION_STATUS,
  type SelectionStatus,
  type SetFantasyTeamRoster,
  type UnlinkFantasyTeam,
} from '../../shared/fantasy-team/fantasy-team.commands';
import { fantasyTeamDecider, isLinked } from '../../shared/fantasy-team/fantasy-team.decider';
import type {
  FantasyTeamArchivedEvent,
  FantasyTeamCreatedEvent,
  FantasyTeamEvent,
  FantasyTeamLinkedEvent,
  FantasyTeamOwnerErasedEvent,
  FantasyTeamRosterSetEvent,
  FantasyTeamUnlinkedEvent,
} from '../../shared/fantasy-team/fantasy-team.events';
import { TEAM_MESSAGES } from '../../shared/fantasy-team/fantasy-team.messages';
import { decisionContext, spec } from '../helpers/decider-spec';

const OWNER = '11111111-1111-4111-8111-111111111111';
const STRANGER = '22222222-2222-4222-8222-222222222222';
const ADMIN = '33333333-3333-4333-8333-333333333333';
const NOW = new Date('2026-02-03T04:05:06.789Z');
const EARLIER = '2026-01-01T00:00:00.000Z';

const asOwner = (): DecisionContext =>
  decisionContext({ now: NOW, actorUserId: OWNER, actorRoles: ['Member'] });
const asStranger = (roles: string[] = ['Member']): DecisionContext =>
  decisionContext({ now: NOW, actorUserId: STRANGER, actorRoles: roles });
const asAdmin = (): DecisionContext =>
  decisionContext({ now: NOW, actorUserId: ADMIN, actorRoles: ['Admin'] });

// Commands
const create = (name = 'Dream Team', season = '2026'): CreateFantasyTeam => ({
  type: 'CreateFantasyTeam',
  data: { name, season },
});
const link = (fantasyTeamExternalId = 4242, fantasyUserId = 77): LinkFantasyTeam => ({
  type: 'LinkFantasyTeam',
  data: { fantasyTeamExternalId, fantasyUserId },
});
const unlink = (unlinkReason: string | null = null): UnlinkFantasyTeam => ({
  type: 'UnlinkFantasyTeam',
  data: { unlinkReason },
});
const setRoster = (players: RosterSlot[]): SetFantasyTeamRoster => ({
  type: 'SetFantasyTeamRoster',
  data: { players },
});
const archive = (reason: string | null = null): ArchiveFantasyTeam => ({
  type: 'ArchiveFantasyTeam',
  data: { reason },
});

// Events
const created = (ownerUserId = OWNER): FantasyTeamCreatedEvent => ({
  type: 'FantasyTeamCreatedEvent',
  data: { ownerUserId, name: 'Dream Team', season: '2026', createdAt: EARLIER },
});
const linked = (
  fantasyTeamExternalId = 4242,
  fantasyUserId = 77,
  linkedAt = EARLIER,
): FantasyTeamLinkedEvent => ({
  type: 'FantasyTeamLinkedEvent',
  data: { fantasyTeamExternalId, fantasyUserId, linkedAt },
});
const unlinked = (unlinkReason: string | null = null, unlinkedAt = EARLIER): FantasyTeamUnlinkedEvent => ({
  type: 'FantasyTeamUnlinkedEvent',
  data: { unlinkedAt, unlinkReason },
});
const rosterSet = (players: RosterSlot[], setAt = EARLIER): FantasyTeamRosterSetEvent => ({
  type: 'FantasyTeamRosterSetEvent',
  data: { players, setAt },
});
const archived = (reason: string | null = null, archivedAt = EARLIER): FantasyTeamArchivedEvent => ({
  type: 'FantasyTeamArchivedEvent',
  data: { reason, archivedAt },
});

/** A participant id that differs per index: `00000000-0000-4000-8000-<index as 12 digits>`. */
const participant = (index: number): string => `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`;
const slot = (index: number, selectionStatus: SelectionStatus = SELECTION_STATUS.Selected): RosterSlot => ({
  participantId: participant(index),
  selectionStatus,
});
const roster = (size: number): RosterSlot[] => Array.from({ length: size }, (_, i) => slot(i + 1));

const team = spec(fantasyTeamDecider);

/** The states of spec 3.2, as histories. */
const UNLINKED_HISTORIES: [string, FantasyTeamEvent[]][] = [
  ['just created', [created()]],
  ['linked then unlinked', [created(), linked(), unlinked('moved on')]],
];
const LINKED = [created(), linked()];

describe('fantasyTeamDecider: spec 3.2 transitions', () => {
  it.each(UNLINKED_HISTORIES)(
    'When an Unlinked team (%s) gets LinkFantasyTeam with both ids > 0, then FantasyTeamLinkedEvent carries the ids and linkedAt = now',
    (_label, history) => {
      team
        .given(history)
        .when(link(9_007_199_254_740_991, 1), asOwner())
        .then([linked(9_007_199_254_740_991, 1, '2026-02-03T04:05:06.789Z')]);
    },
  );

  it('When FantasyTeamLinkedEvent is folded, then the team is Linked with both ids set', () => {
    const state = fold(fantasyTeamDecider, [created(), linked(4242, 77)]);
    expect(state).toMatchObject({ fantasyTeamExternalId: 4242, fantasyUserId: 77, archived: false });
    expect(state && isLinked(state)).toBe(true);
  });

  it('When a Linked team gets UnlinkFantasyTeam, then FantasyTeamUnlinkedEvent carries unlinkedAt = now and the reason', () => {
    team
      .given(LINKED)
      .when(unlink('season over'), asOwner())
      .then([unlinked('season over', '2026-02-03T04:05:06.789Z')]);
  });

  it('When UnlinkFantasyTeam has no reason, then the event says unlinkReason null', () => {
    team
      .given(LINKED)
      .when(unlink(null), asOwner())
      .then([
        { type: 'FantasyTeamUnlinkedEvent', data: { unlinkedAt: NOW.toISOString(), unlinkReason: null } },
      ]);
  });

  it('When FantasyTeamUnlinkedEvent is folded, then both ids are back to 0 (Unlinked)', () => {
    const state = fold(fantasyTeamDecider, [created(), linked(4242, 77), unlinked()]);
    expect(state).toMatchObject({ fantasyTeamExternalId: 0, fantasyUserId: 0 });
    expect(state && isLinked(state)).toBe(false);
  });

  it.each([
    ['LinkFantasyTeam', 'Cannot link non-existent team', link()],
    ['UnlinkFantasyTeam', 'Cannot unlink non-existent team', unlink()],
  ] as const)(
    'When a NotCreated team gets %s, then it is rejected as invalid with "%s"',
    (_type, message, command) => {
      team.given([]).when(command, asOwner()).thenRejectedWith(message, 'invalid');
    },
  );

  it.each([
    ['an unlinked', [created(), archived()]],
    ['a linked', [created(), linked(), archived()]],
  ] as const)(
    'When %s Archived team gets Link or Unlink, then each is rejected as invalid with the spec text',
    (_label, history) => {
      team.given(history).when(link(), asOwner()).thenRejectedWith('Cannot link archived team', 'invalid');
      team
        .given(history)
        .when(unlink(), asOwner())
        .thenRejectedWith('Cannot unlink archived team', 'invalid');
    },
  );

  it('When a Linked team gets LinkFantasyTeam again, then it is rejected with the already-linked text', () => {
    team
      .given(LINKED)
      .when(link(1, 2), asOwner())
      .thenRejectedWith(
        'Team is already linked to a fantasy identity. Unlink first before linking a new one',
        'invalid',
      );
  });

  it.each(UNLINKED_HISTORIES)(
    'When an Unlinked team (%s) gets UnlinkFantasyTeam, then it is rejected with "Team has no linked fantasy identity"',
    (_label, history) => {
      team
        .given(history)
        .when(unlink(), asOwner())
        .thenRejectedWith('Team has no linked fantasy identity', 'invalid');
    },
  );
});

describe('fantasyTeamDecider: spec section 7 messages', () => {
  it.each([
    [0, 77],
    [-1, 77],
  ])(
    'When fantasyTeamExternalId is %d, then Link is rejected with "FantasyTeamExternalId must be positive"',
    (externalId, userId) => {
      team
        .given([created()])
        .when(link(externalId, userId), asOwner())
        .thenRejectedWith('FantasyTeamExternalId must be positive', 'invalid');
    },
  );

  it.each([
    [4242, 0],
    [4242, -5],
  ])(
    'When fantasyUserId is %d/%d, then Link is rejected with "FantasyUserId must be positive"',
    (externalId, userId) => {
      team
        .given([created()])
        .when(link(externalId, userId), asOwner())
        .thenRejectedWith('FantasyUserId must be positive', 'invalid');
    },
  );

  it('When both ids are invalid, then the external id rule is reported (the spec order)', () => {
    team
      .given([created()])
      .when(link(0, 0), asOwner())
      .thenRejectedWith('FantasyTeamExternalId must be positive', 'invalid');
  });

  it('When the rules are checked, then existence comes before archival, archival before linkage, linkage before the ids', () => {
    team.given([]).when(link(0, 0), asOwner()).thenRejectedWith('Cannot link non-existent team');
    team
      .given([created(), linked(), archived()])
      .when(link(0, 0), asOwner())
      .thenRejectedWith('Cannot link archived team');
    team
      .given(LINKED)
      .when(link(0, 0), asOwner())
      .thenRejectedWith(
        'Team is already linked to a fantasy identity. Unlink first before linking a new one',
      );
  });

  it('When the message table is read, then the Link and Unlink texts are the spec’s, character for character', () => {
    expect({
      linkMissing: TEAM_MESSAGES.nonExistent('link'),
      linkArchived: TEAM_MESSAGES.archived('link'),
      alreadyLinked: TEAM_MESSAGES.alreadyLinked,
      externalId: TEAM_MESSAGES.externalIdNotPositive,
      userId: TEAM_MESSAGES.userIdNotPositive,
      unlinkMissing: TEAM_MESSAGES.nonExistent('unlink'),
      unlinkArchived: TEAM_MESSAGES.archived('unlink'),
      notLinked: TEAM_MESSAGES.notLinked,
    }).toEqual({
      linkMissing: 'Cannot link non-existent team',
      linkArchived: 'Cannot link archived team',
      alreadyLinked: 'Team is already linked to a fantasy identity. Unlink first before linking a new one',
      externalId: 'FantasyTeamExternalId must be positive',
      userId: 'FantasyUserId must be positive',
      unlinkMissing: 'Cannot unlink non-existent team',
      unlinkArchived: 'Cannot unlink archived team',
      notLinked: 'Team has no linked fantasy identity',
    });
  });
});

describe('fantasyTeamDecider: create', () => {
  it('When CreateFantasyTeam runs on no history, then FantasyTeamCreatedEvent names the actor as owner and createdAt = now', () => {
    team
      .given([])
      .when(create('Night Owls', '2025'), asOwner())
      .then([
        {
          type: 'FantasyTeamCreatedEvent',
          data: {
            ownerUserId: OWNER,
            name: 'Night Owls',
            season: '2025',
            createdAt: '2026-02-03T04:05:06.789Z',
          },
        },
      ]);
  });

  it('When FantasyTeamCreatedEvent is folded, then the team is Unlinked, not archived, with an empty roster', () => {
    expect(fantasyTeamDecider.initialState).toBeNull();
    expect(fold(fantasyTeamDecider, [created()])).toEqual({
      ownerUserId: OWNER,
      name: 'Dream Team',
      season: '2026',
      fantasyTeamExternalId: 0,
      fantasyUserId: 0,
      archived: false,
      roster: [],
    });
  });

  it.each([
    ['created', [created()]],
    ['linked', LINKED],
    ['archived', [created(), archived()]],
  ] as const)(
    'When the team is already %s, then CreateFantasyTeam is rejected with "Team already exists"',
    (_l, history) => {
      team.given(history).when(create(), asOwner()).thenRejectedWith('Team already exists', 'invalid');
      // Not even an Admin or another member can re-create it.
      team.given(history).when(create(), asAdmin()).thenRejectedWith('Team already exists', 'invalid');
      team.given(history).when(create(), asStranger()).thenRejectedWith('Team already exists', 'invalid');
    },
  );
});

describe('fantasyTeamDecider: roster rules', () => {
  it('When a roster of 30 with one Captain and one ViceCaptain is set, then FantasyTeamRosterSetEvent carries it and setAt = now', () => {
    const players = [
      slot(1, SELECTION_STATUS.Captain),
      slot(2, SELECTION_STATUS.ViceCaptain),
      slot(3, SELECTION_STATUS.Reserve),
      slot(4, SELECTION_STATUS.Bench),
      ...roster(30).slice(4),
    ];
    expect(players).toHaveLength(30);
    team
      .given([created()])
      .when(setRoster(players), asOwner())
      .then([rosterSet(players, '2026-02-03T04:05:06.789Z')]);
    expect(fold(fantasyTeamDecider, [created(), rosterSet(players)])?.roster).toEqual(players);
  });

  it('When an empty roster is set, then it is accepted (a roster may be cleared)', () => {
    team
      .given([created(), rosterSet(roster(3))])
      .when(setRoster([]), asOwner())
      .then([rosterSet([], NOW.toISOString())]);
    expect(fold(fantasyTeamDecider, [created(), rosterSet(roster(3)), rosterSet([])])?.roster).toEqual([]);
  });

  it('When the roster has 31 players, then it is rejected with "A roster holds at most 30 players"', () => {
    team
      .given([created()])
      .when(setRoster(roster(31)), asOwner())
      .thenRejectedWith('A roster holds at most 30 players', 'invalid');
    expect(TEAM_MESSAGES.rosterTooLarge(30)).toBe('A roster holds at most 30 players');
  });

  it('When a participant appears twice, then it is rejected naming the participant', () => {
    const players = [slot(1), slot(2), { ...slot(1), selectionStatus: SELECTION_STATUS.Bench }];
    team
      .given([created()])
      .when(setRoster(players), asOwner())
      .thenRejectedWith(`Participant ${participant(1)} appears more than once in the roster`, 'invalid');
  });

  it('When two Captains are named, then it is rejected with "A roster has at most one Captain"', () => {
    team
      .given([created()])
      .when(setRoster([slot(1, SELECTION_STATUS.Captain), slot(2, SELECTION_STATUS.Captain)]), asOwner())
      .thenRejectedWith('A roster has at most one Captain', 'invalid');
  });

  it('When two ViceCaptains are named, then it is rejected with "A roster has at most one ViceCaptain"', () => {
    team
      .given([created()])
      .when(
        setRoster([slot(1, SELECTION_STATUS.ViceCaptain), slot(2, SELECTION_STATUS.ViceCaptain), slot(3)]),
        asOwner(),
      )
      .thenRejectedWith('A roster has at most one ViceCaptain', 'invalid');
  });

  it('When the roster is set on a team that does not exist, then it is rejected with "Cannot set the roster of non-existent team"', () => {
    team
      .given([])
      .when(setRoster(roster(1)), asOwner())
      .thenRejectedWith('Cannot set the roster of non-existent team', 'invalid');
  });

  it('When a team is linked and gets a roster, then linking is unaffected (the roster is independent)', () => {
    const state = fold(fantasyTeamDecider, [created(), linked(5, 6), rosterSet(roster(2))]);
    expect(state).toMatchObject({ fantasyTeamExternalId: 5, fantasyUserId: 6, roster: roster(2) });
  });
});

describe('fantasyTeamDecider: archive', () => {
  it('When the owner archives a team, then FantasyTeamArchivedEvent carries the reason and archivedAt = now', () => {
    team
      .given(LINKED)
      .when(archive('retired'), asOwner())
      .then([archived('retired', '2026-02-03T04:05:06.789Z')]);
    team
      .given([created()])
      .when(archive(), asOwner())
      .then([archived(null, NOW.toISOString())]);
  });

  it('When FantasyTeamArchivedEvent is folded, then the team is archived and keeps its link and roster', () => {
    expect(
      fold(fantasyTeamDecider, [created(), linked(8, 9), rosterSet(roster(2)), archived()]),
    ).toMatchObject({
      archived: true,
      fantasyTeamExternalId: 8,
      fantasyUserId: 9,
      roster: roster(2),
    });
  });

  const ARCHIVED = [created(), linked(), archived()];
  it.each([
    ['link', link()],
    ['unlink', unlink()],
    ['set the roster of', setRoster(roster(2))],
    ['archive', archive()],
  ] as [string, FantasyTeamCommand][])(
    'When an archived team gets a command, then it is rejected with "Cannot %s archived team", for its owner and for an Admin',
    (verb, command) => {
      team
        .given(ARCHIVED)
        .when(command, asOwner())
        .thenRejectedWith(`Cannot ${verb} archived team`, 'invalid');
      team
        .given(ARCHIVED)
        .when(command, asAdmin())
        .thenRejectedWith(`Cannot ${verb} archived team`, 'invalid');
    },
  );

  it('When archiving a team that does not exist, then it is rejected with "Cannot archive non-existent team"', () => {
    team.given([]).when(archive(), asOwner()).thenRejectedWith('Cannot archive non-existent team', 'invalid');
  });
});

describe('fantasyTeamDecider: who may act', () => {
  const COMMANDS: [string, FantasyTeamEvent['type'], FantasyTeamEvent[], FantasyTeamCommand][] = [
    ['LinkFantasyTeam', 'FantasyTeamLinkedEvent', [created()], link()],
    ['UnlinkFantasyTeam', 'FantasyTeamUnlinkedEvent', LINKED, unlink()],
    ['SetFantasyTeamRoster', 'FantasyTeamRosterSetEvent', [created()], setRoster(roster(2))],
    ['ArchiveFantasyTeam', 'FantasyTeamArchivedEvent', [created()], archive()],
  ];

  it.each(COMMANDS)(
    'When a Member who does not own the team sends %s, then it gets the answer of a missing team, word for word, and nothing is raised',
    (_type, _eventType, history, command) => {
      const missing = fantasyTeamDecider.decide(command, null, asStranger());
      expect(missing.accepted).toBe(false);
      if (missing.accepted) return;
      team.given(history).when(command, asStranger()).thenRejectedWith(missing.message, 'invalid');
      // A role that includes Member but not Admin does not help either.
      team
        .given(history)
        .when(command, asStranger(['UserManager']))
        .thenRejectedWith(missing.message, 'invalid');
    },
  );

  it.each(COMMANDS)(
    'When an Admin who does not own the team sends %s, then it is accepted with one %s',
    (_type, eventType, history, command) => {
      const decision = fantasyTeamDecider.decide(command, fold(fantasyTeamDecider, history), asAdmin());
      expect(decision.accepted && decision.events.map((event) => event.type)).toEqual([eventType]);
    },
  );

  it('When an Admin links a team, then the event is the same as the owner’s (the owner does not change)', () => {
    team
      .given([created()])
      .when(link(1, 2), asAdmin())
      .then([linked(1, 2, NOW.toISOString())]);
    const state = fold(fantasyTeamDecider, [created(), linked(1, 2, NOW.toISOString())]);
    expect(state?.ownerUserId).toBe(OWNER);
  });

  it('When a stranger acts on an archived team, then the answer is that of a missing team (it learns nothing about the team)', () => {
    team
      .given([created(), archived()])
      .when(link(), asStranger())
      .thenRejectedWith('Cannot link non-existent team', 'invalid');
  });

  it('When a stranger acts on a team that does not exist, then the answer is the non-existent rejection', () => {
    team
      .given([])
      .when(unlink(), asStranger())
      .thenRejectedWith('Cannot unlink non-existent team', 'invalid');
  });

  it('When the context carries a time, then it is the only clock (not the wall clock)', () => {
    const past = new Date('2001-02-03T04:05:06.007Z');
    const context = decisionContext({ now: past, actorUserId: OWNER, actorRoles: ['Member'] });
    const decision = fantasyTeamDecider.decide(link(), fold(fantasyTeamDecider, [created()]), context);
    expect(decision.accepted && decision.events[0]?.data).toEqual({
      fantasyTeamExternalId: 4242,
      fantasyUserId: 77,
      linkedAt: '2001-02-03T04:05:06.007Z',
    });
  });
});

describe("fantasyTeamDecider: an erased owner's team passes to its tombstone (the service's own command)", () => {
  const TOMBSTONE = '44444444-4444-4444-8444-444444444444';
  const asService = (): DecisionContext =>
    decisionContext({ now: NOW, actorUserId: SERVICE_ACTOR_ID, actorRoles: ['Admin'] });
  const eraseOwner = (fromUserId = OWNER): EraseFantasyTeamOwner => ({
    type: 'EraseFantasyTeamOwner',
    data: { fromUserId, tombstoneId: TOMBSTONE },
  });
  const ownerErased: FantasyTeamOwnerErasedEvent = {
    type: 'FantasyTeamOwnerErasedEvent',
    data: { ownerUserId: TOMBSTONE, erasedAt: NOW.toISOString() },
  };

  it.each([
    ['a live team', [created()]],
    ['a linked team', LINKED],
    ['an archived team', [created(), archived()]],
  ] as [string, FantasyTeamEvent[]][])(
    'When the service erases the owner of %s, then FantasyTeamOwnerErasedEvent names the tombstone, and folded the team belongs to it and keeps the rest',
    (_label, history) => {
      team.given(history).when(eraseOwner(), asService()).then([ownerErased]);
      const before = fold(fantasyTeamDecider, history);
      expect(fold(fantasyTeamDecider, [...history, ownerErased])).toEqual({
        ...before,
        ownerUserId: TOMBSTONE,
      });
    },
  );

  it('When the owner was passed on already (a retried erasure), then it is refused and nothing is raised twice', () => {
    team
      .given([created(), ownerErased])
      .when(eraseOwner(), asService())
      .thenRejectedWith(TEAM_MESSAGES.ownerErasureNotOwner, 'invalid');
  });

  it('When the team does not exist (a reservation that never became a team), then it is refused', () => {
    team
      .given([])
      .when(eraseOwner(), asService())
      .thenRejectedWith(TEAM_MESSAGES.ownerErasureNoTeam, 'invalid');
  });

  it('When the team belongs to someone else, then it is refused', () => {
    team
      .given([created(STRANGER)])
      .when(eraseOwner(OWNER), asService())
      .thenRejectedWith(TEAM_MESSAGES.ownerErasureNotOwner, 'invalid');
  });

  it('When anyone but the service sends it (the owner, a UserManager, an Admin), then it is forbidden', () => {
    team
      .given([created()])
      .when(eraseOwner(), asAdmin())
      .thenRejectedWith(TEAM_MESSAGES.forbidden, 'forbidden');
    team
      .given([created()])
      .when(eraseOwner(), asOwner())
      .thenRejectedWith(TEAM_MESSAGES.forbidden, 'forbidden');
    team
      .given([created()])
      .when(eraseOwner(), asStranger(['UserManager']))
      .thenRejectedWith(TEAM_MESSAGES.forbidden, 'forbidden');
  });

  it('When a team passed to its tombstone gets a command from its old owner, then it is missing to them: the team is no longer theirs', () => {
    team
      .given([created(), ownerErased])
      .when(link(), asOwner())
      .thenRejectedWith('Cannot link non-existent team', 'invalid');
  });
});
