import Joi from 'joi';

import { boundedArray, guid, long, seasonYear, text } from '../validation';
import {
  DEFAULT_SEASON,
  type FantasyTeamCommand,
  MAX_ROSTER_SIZE,
  type RosterSlot,
  SELECTION_STATUS,
} from './fantasy-team.commands';
import { TEAM_MESSAGES } from './fantasy-team.messages';

/**
 * One entry per fantasy-team command type of POST /api/command: the schema of its `command` object
 * and how a validated object becomes the domain command. All of them act on the fantasy team
 * aggregate named by `aggregateRootId` (run by run-team-command.ts); commands of another aggregate
 * get definitions (and a use case) of their own.
 */
export interface FantasyTeamCommandDefinition {
  readonly commandType: FantasyTeamCommand['type'];
  readonly description: string;
  readonly schema: Joi.ObjectSchema;
  toDomain(command: Record<string, unknown>): FantasyTeamCommand;
}

const aggregateRootId = guid().required();
const UNLINK_REASON_MAX = 1000;
// A roster member exceeding the caps is a rule failure with the decider's message, not a schema one.
const ROSTER_LIMIT_FOR_SCHEMA = MAX_ROSTER_SIZE * 10;

export const FANTASY_TEAM_COMMAND_DEFINITIONS: readonly FantasyTeamCommandDefinition[] = [
  {
    commandType: 'CreateFantasyTeam',
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
    description: 'Archives the team; an archived team rejects every command.',
    schema: Joi.object({ aggregateRootId, reason: text({ max: 1000 }).allow(null, '').default(null) }),
    toDomain: (c) => ({ type: 'ArchiveFantasyTeam', data: { reason: (c.reason as string | null) ?? null } }),
  },
];
