import Joi from 'joi';

import type { Role } from '../roles';
import { boundedArray, guid, long, seasonYear, text } from '../validation';
import { TEAM_MESSAGES } from './fantasy-team.messages';

/** Selection status codes of a roster slot (spec 3.1). */
export const SELECTION_STATUS = { Captain: 0, ViceCaptain: 1, Selected: 2, Reserve: 3, Bench: 4 } as const;
export type SelectionStatus = (typeof SELECTION_STATUS)[keyof typeof SELECTION_STATUS];

export const MAX_ROSTER_SIZE = 30;
export const DEFAULT_SEASON = '2026';

export interface RosterSlot {
  /** The platform participant id (GUID, lower case). */
  readonly participantId: string;
  readonly selectionStatus: SelectionStatus;
}

export interface CreateFantasyTeam {
  readonly type: 'CreateFantasyTeam';
  readonly data: { readonly name: string; readonly season: string };
}

export interface LinkFantasyTeam {
  readonly type: 'LinkFantasyTeam';
  readonly data: { readonly fantasyTeamExternalId: number; readonly fantasyUserId: number };
}

export interface UnlinkFantasyTeam {
  readonly type: 'UnlinkFantasyTeam';
  readonly data: { readonly unlinkReason: string | null };
}

export interface SetFantasyTeamRoster {
  readonly type: 'SetFantasyTeamRoster';
  readonly data: { readonly players: readonly RosterSlot[] };
}

export interface ArchiveFantasyTeam {
  readonly type: 'ArchiveFantasyTeam';
  readonly data: { readonly reason: string | null };
}

export type FantasyTeamCommand =
  CreateFantasyTeam | LinkFantasyTeam | UnlinkFantasyTeam | SetFantasyTeamRoster | ArchiveFantasyTeam;

/**
 * The service's own command, never a client's (no definition of POST /api/command names it): when an
 * account is erased, each team it owns passes to its tombstone id, an id that names no account, so
 * the team stays and no longer points at the person (ADR 0014). Archived teams pass too.
 */
export interface EraseFantasyTeamOwner {
  readonly type: 'EraseFantasyTeamOwner';
  readonly data: { readonly fromUserId: string; readonly tombstoneId: string };
}

/** Every command the team decider takes: the clients' and the service's own. */
export type AnyFantasyTeamCommand = FantasyTeamCommand | EraseFantasyTeamOwner;

/**
 * One entry per fantasy-team command type of POST /api/command: the schema of its `command` object
 * and how a validated object becomes the domain command. All of them act on the fantasy team
 * aggregate named by `aggregateRootId` (run by run-team-command.ts); commands of another aggregate
 * get definitions (and a use case) of their own.
 */
export interface FantasyTeamCommandDefinition {
  readonly commandType: FantasyTeamCommand['type'];
  readonly description: string;
  /** Who may send it (none: any authenticated account); the aggregate's rules decide the rest. */
  readonly roles: readonly Role[];
  readonly schema: Joi.ObjectSchema;
  toDomain(command: Record<string, unknown>): FantasyTeamCommand;
}

/** The roles that may send a team command at all; ownership is the decider's check. */
export const FANTASY_TEAM_COMMAND_ROLES: readonly Role[] = ['Member'];

const aggregateRootId = guid().required();
const UNLINK_REASON_MAX = 1000;
// A roster member exceeding the caps is a rule failure with the decider's message, not a schema one.
const ROSTER_LIMIT_FOR_SCHEMA = MAX_ROSTER_SIZE * 10;

export const FANTASY_TEAM_COMMAND_DEFINITIONS: readonly FantasyTeamCommandDefinition[] = [
  {
    commandType: 'CreateFantasyTeam',
    roles: FANTASY_TEAM_COMMAND_ROLES,
    description: 'Creates a team owned by the caller.',
    schema: Joi.object({
      aggregateRootId,
      name: text({ min: 1, max: 100, notBlank: true }).trim().required(),
      season: seasonYear().default(DEFAULT_SEASON),
    }),
    toDomain: (c) => ({
      type: 'CreateFantasyTeam',
      data: { name: String(c.name), season: String(c.season) },
    }),
  },
  {
    commandType: 'LinkFantasyTeam',
    roles: FANTASY_TEAM_COMMAND_ROLES,
    description: 'Links a fantasy-game team identity to the team (spec 4.5).',
    schema: Joi.object({
      aggregateRootId,
      // Positivity is the decider's rule, so the answer carries the spec's message, not a field error.
      fantasyTeamExternalId: long()
        .required()
        .description(`Greater than 0, else refused with "${TEAM_MESSAGES.externalIdNotPositive}".`),
      fantasyUserId: long()
        .required()
        .description(`Greater than 0, else refused with "${TEAM_MESSAGES.userIdNotPositive}".`),
    }),
    toDomain: (c) => ({
      type: 'LinkFantasyTeam',
      data: {
        fantasyTeamExternalId: Number(c.fantasyTeamExternalId),
        fantasyUserId: Number(c.fantasyUserId),
      },
    }),
  },
  {
    commandType: 'UnlinkFantasyTeam',
    roles: FANTASY_TEAM_COMMAND_ROLES,
    description: 'Removes the fantasy-game identity from the team (spec 4.5).',
    schema: Joi.object({
      aggregateRootId,
      unlinkReason: text({ max: UNLINK_REASON_MAX }).allow(null, '').default(null),
    }),
    toDomain: (c) => ({
      type: 'UnlinkFantasyTeam',
      data: { unlinkReason: (c.unlinkReason as string | null) ?? null },
    }),
  },
  {
    commandType: 'SetFantasyTeamRoster',
    roles: FANTASY_TEAM_COMMAND_ROLES,
    description: 'Replaces the roster: at most 30 players, one Captain, one ViceCaptain.',
    schema: Joi.object({
      aggregateRootId,
      players: boundedArray(
        Joi.object({
          participantId: guid().required(),
          selectionStatus: Joi.number()
            .strict()
            .valid(...Object.values(SELECTION_STATUS))
            .required(),
        }),
        ROSTER_LIMIT_FOR_SCHEMA,
      ).required(),
    }),
    toDomain: (c) => ({
      type: 'SetFantasyTeamRoster',
      data: { players: c.players as RosterSlot[] },
    }),
  },
  {
    commandType: 'ArchiveFantasyTeam',
    roles: FANTASY_TEAM_COMMAND_ROLES,
    description: 'Archives the team; an archived team rejects every command.',
    schema: Joi.object({ aggregateRootId, reason: text({ max: 1000 }).allow(null, '').default(null) }),
    toDomain: (c) => ({ type: 'ArchiveFantasyTeam', data: { reason: (c.reason as string | null) ?? null } }),
  },
];
