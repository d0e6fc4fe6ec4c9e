import {
  accept,
  type Decider,
  type Decision,
  type DecisionContext,
  forbid,
  reject,
  SERVICE_ACTOR_ID,
} from '../event-store/decider';
import { isOwnerOrAdmin } from '../roles';
import {
  type AnyFantasyTeamCommand,
  type EraseFantasyTeamOwner,
  type FantasyTeamCommand,
  MAX_ROSTER_SIZE,
  type RosterSlot,
  SELECTION_STATUS,
  type SetFantasyTeamRoster,
} from './fantasy-team.commands';
import type { FantasyTeamEvent } from './fantasy-team.events';
import { TEAM_MESSAGES, type TeamVerb } from './fantasy-team.messages';

/** A team as folded from its events (spec 2.5); null before it is created. */
export type FantasyTeamState = {
  readonly ownerUserId: string;
  readonly name: string;
  readonly season: string;
  /** 0 when not linked. */
  readonly fantasyTeamExternalId: number;
  /** 0 when not linked. */
  readonly fantasyUserId: number;
  readonly archived: boolean;
  readonly roster: readonly RosterSlot[];
} | null;

type Existing = NonNullable<FantasyTeamState>;

const VERBS: Readonly<Record<FantasyTeamCommand['type'], TeamVerb>> = {
  CreateFantasyTeam: 'create',
  LinkFantasyTeam: 'link',
  UnlinkFantasyTeam: 'unlink',
  SetFantasyTeamRoster: 'set the roster of',
  ArchiveFantasyTeam: 'archive',
};

export function isLinked(team: Existing): boolean {
  return team.fantasyTeamExternalId > 0 && team.fantasyUserId > 0;
}

/** The rules every command on an existing team shares, in the spec's order. */
function guardExisting(
  command: FantasyTeamCommand,
  state: FantasyTeamState,
  context: DecisionContext,
): Decision<FantasyTeamEvent> | Existing {
  const verb = VERBS[command.type];
  // Only the owner or an Admin may act; anyone else gets the answer of a missing team, word for
  // word, so a command cannot tell another owner's team from none (GetFantasyTeam hides it too).
  if (
    state === null ||
    !isOwnerOrAdmin({ userId: context.actorUserId, roles: context.actorRoles }, state.ownerUserId)
  ) {
    return reject(TEAM_MESSAGES.nonExistent(verb));
  }
  if (state.archived) return reject(TEAM_MESSAGES.archived(verb));
  return state;
}

function rosterProblem(command: SetFantasyTeamRoster): string | undefined {
  const { players } = command.data;
  if (players.length > MAX_ROSTER_SIZE) return TEAM_MESSAGES.rosterTooLarge(MAX_ROSTER_SIZE);
  const seen = new Set<string>();
  for (const { participantId } of players) {
    if (seen.has(participantId)) return TEAM_MESSAGES.rosterDuplicate(participantId);
    seen.add(participantId);
  }
  for (const status of ['Captain', 'ViceCaptain'] as const) {
    if (players.filter((slot) => slot.selectionStatus === SELECTION_STATUS[status]).length > 1) {
      return TEAM_MESSAGES.rosterTooMany(status);
    }
  }
  return undefined;
}

/**
 * The service's erasure of an owner: only as the service itself (no client command reaches it, and
 * an Admin sending it some other way would still be refused: it would hand teams to any id), only
 * from the erased owner, whether the team is archived or not. A team passed already is refused, so a
 * retried erasure writes nothing twice.
 */
function decideOwnerErasure(
  command: EraseFantasyTeamOwner,
  state: FantasyTeamState,
  context: DecisionContext,
): Decision<FantasyTeamEvent> {
  if (context.actorUserId !== SERVICE_ACTOR_ID) return forbid(TEAM_MESSAGES.forbidden);
  if (state === null) return reject(TEAM_MESSAGES.ownerErasureNoTeam);
  if (state.ownerUserId !== command.data.fromUserId) return reject(TEAM_MESSAGES.ownerErasureNotOwner);
  return accept({
    type: 'FantasyTeamOwnerErasedEvent',
    data: { ownerUserId: command.data.tombstoneId, erasedAt: context.now.toISOString() },
  });
}

export const fantasyTeamDecider: Decider<FantasyTeamState, AnyFantasyTeamCommand, FantasyTeamEvent> = {
  aggregateType: 'fantasy-team',
  initialState: null,

  decide(command, state, context) {
    const now = context.now.toISOString();
    if (command.type === 'EraseFantasyTeamOwner') return decideOwnerErasure(command, state, context);
    if (command.type === 'CreateFantasyTeam') {
      if (state !== null) return reject(TEAM_MESSAGES.alreadyExists);
      return accept({
        type: 'FantasyTeamCreatedEvent',
        data: {
          ownerUserId: context.actorUserId,
          name: command.data.name,
          season: command.data.season,
          createdAt: now,
        },
      });
    }

    const team = guardExisting(command, state, context);
    if ('accepted' in team) return team;

    switch (command.type) {
      case 'LinkFantasyTeam': {
        const { fantasyTeamExternalId, fantasyUserId } = command.data;
        if (isLinked(team)) return reject(TEAM_MESSAGES.alreadyLinked);
        if (fantasyTeamExternalId <= 0) return reject(TEAM_MESSAGES.externalIdNotPositive);
        if (fantasyUserId <= 0) return reject(TEAM_MESSAGES.userIdNotPositive);
        return accept({
          type: 'FantasyTeamLinkedEvent',
          data: { fantasyTeamExternalId, fantasyUserId, linkedAt: now },
        });
      }
      case 'UnlinkFantasyTeam':
        if (!isLinked(team)) return reject(TEAM_MESSAGES.notLinked);
        return accept({
          type: 'FantasyTeamUnlinkedEvent',
          data: { unlinkedAt: now, unlinkReason: command.data.unlinkReason },
        });
      case 'SetFantasyTeamRoster': {
        const problem = rosterProblem(command);
        if (problem) return reject(problem);
        return accept({
          type: 'FantasyTeamRosterSetEvent',
          data: { players: command.data.players, setAt: now },
        });
      }
      case 'ArchiveFantasyTeam':
        return accept({
          type: 'FantasyTeamArchivedEvent',
          data: { reason: command.data.reason, archivedAt: now },
        });
      default: {
        const _exhaustive: never = command;
        return _exhaustive;
      }
    }
  },

  evolve(state, event) {
    switch (event.type) {
      case 'FantasyTeamCreatedEvent':
        return {
          ownerUserId: event.data.ownerUserId,
          name: event.data.name,
          season: event.data.season,
          fantasyTeamExternalId: 0,
          fantasyUserId: 0,
          archived: false,
          roster: [],
        };
      case 'FantasyTeamLinkedEvent':
        return (
          state && {
            ...state,
            fantasyTeamExternalId: event.data.fantasyTeamExternalId,
            fantasyUserId: event.data.fantasyUserId,
          }
        );
      case 'FantasyTeamUnlinkedEvent':
        return state && { ...state, fantasyTeamExternalId: 0, fantasyUserId: 0 };
      case 'FantasyTeamRosterSetEvent':
        return state && { ...state, roster: event.data.players };
      case 'FantasyTeamArchivedEvent':
        return state && { ...state, archived: true };
      case 'FantasyTeamOwnerErasedEvent':
        return state && { ...state, ownerUserId: event.data.ownerUserId };
      default: {
        const _exhaustive: never = event;
        return state;
      }
    }
  },
};
