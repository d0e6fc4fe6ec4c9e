import Joi from 'joi';

import type { CoreServices } from '../../core-services';
import type { Decider, DomainEvent } from '../../event-store/decider';
import { DEFAULT_SEASON } from '../../fantasy-team/fantasy-team.commands';
import { hasAnyRole, type Role } from '../../roles';
import { playerDecider } from '../../sport/player.decider';
import { playerIdentifierDecider } from '../../sport/player-identifier.decider';
import { seasonDecider } from '../../sport/season.decider';
import type { PlayerUpdatedEvent } from '../../sport/sport.events';
import {
  canonicalIdentity,
  DEFAULT_FINAL_ROUND,
  DEFAULT_ROUND,
  playerIdentifierId,
  type PlayerIdentifierKind,
  type PlayerIdentity,
  type PlayerSeasonStats,
  seasonId,
} from '../../sport/sport.model';
import { boundedArray, guid, isGuid, isSeasonYear, long, seasonYear, text } from '../../validation';
import {
  batchRefused,
  failedAtAggregate,
  forEachLimited,
  type ImportContext,
  type Importer,
  importOutcome,
  processingFailed,
  receivedField,
  receivedRows,
  roleRefusal,
  type RowError,
  stoppedBySubmitter,
} from '../importer';

export type SeedPlayerRow = PlayerIdentity & {
  readonly platformId: string;
  readonly stats: PlayerSeasonStats;
};

export interface PlayerSeedingData {
  readonly season: string;
  readonly round: number;
  readonly finalRound: number;
  readonly players: readonly SeedPlayerRow[];
}

const REQUIRED_ROLES: readonly Role[] = ['Admin'];
const ROUND_LIMIT = 1000;
/** The spec's failure of a submitter without Admin, at the first player's aggregate. */
const refusedForRole = roleRefusal('SeedPlayer', REQUIRED_ROLES);
const name = text({ max: 200 }).trim().allow('').default('');

const playerSchema = Joi.object<SeedPlayerRow>({
  feedId: long().min(1).required(),
  feedFirstName: name,
  feedLastName: name,
  feedFullName: name,
  feedShortName: name,
  leaguePlayerId: text({ max: 100 }).trim().allow('').default(''),
  leagueFirstName: name,
  leagueLastName: name,
  fantasyId: long().min(1).required(),
  platformId: guid().required(),
  platformFullName: name,
  platformSlug: name,
  stats: Joi.object<PlayerSeasonStats>({
    rating: Joi.number().strict().allow(null).required(),
    price: long().required(),
    fantasyPositions: boundedArray(Joi.number().strict().integer().min(0).max(1000), 20).default([]),
    breakdown: Joi.object()
      .pattern(
        /^(0|[1-9]\d{0,2})$/,
        Joi.object({
          projectedPoints: Joi.number().strict().required(),
          priceDelta: Joi.number().strict().required(),
        }),
      )
      .allow(null)
      .default(null)
      .messages({ 'object.unknown': '{{#label}} is not a round number (0-999)' }),
  }).required(),
});

/** The identifiers a player holds alone, in the order they are claimed. */
function identifiersOf(row: SeedPlayerRow): [PlayerIdentifierKind, number][] {
  return [
    ['feed', row.feedId],
    ['fantasy', row.fantasyId],
  ];
}

/** Rows of the batch repeating a platform id, feed id or fantasy id of an earlier row. */
function duplicatesInBatch(players: readonly SeedPlayerRow[]): RowError[] {
  const seen = new Map<string, number>();
  const duplicates: RowError[] = [];
  players.forEach((row, index) => {
    const unique: [string, string | number][] = [
      ['platformId', row.platformId],
      ['feedId', row.feedId],
      ['fantasyId', row.fantasyId],
    ];
    for (const [field, value] of unique) {
      const first = seen.get(`${field}:${value}`);
      if (first === undefined) {
        seen.set(`${field}:${value}`, index);
        continue;
      }
      duplicates.push({
        index,
        platformId: row.platformId,
        code: 'DUPLICATE_IN_BATCH',
        message: `${field} ${value} is already used by row ${first}`,
      });
      return;
    }
  });
  return duplicates;
}

/** Counts of what ran, shared by the player lanes. */
class Tally {
  commands = 0;
  events = 0;
  readonly aggregates = new Set<string>();
  readonly rowErrors: RowError[] = [];
  playersSeeded = 0;
}

/** Runs commands as the submitter, counting what was accepted. */
function commandRunner(context: ImportContext, services: CoreServices, tally: Tally) {
  return async <State, Command, Event extends DomainEvent>(
    decider: Decider<State, Command, Event>,
    aggregateId: string,
    command: Command,
  ) => {
    const outcome = await services.commands.handle(decider, {
      aggregateId,
      command,
      context: { now: new Date(), actorUserId: context.actor.userId, actorRoles: context.actor.roles },
      metadata: {
        actorUserId: context.actor.userId,
        requestId: context.requestId,
        correlationId: context.importJobId,
      },
    });
    if (outcome.accepted) {
      tally.commands += 1;
      tally.events += outcome.events.length;
      tally.aggregates.add(`${decider.aggregateType}:${aggregateId}`);
    }
    return outcome;
  };
}

/**
 * One player: claim its feed id and fantasy id (refused when another player holds one: a
 * per-player error, the rest of the batch goes on), seed it, then release identifiers it held
 * before an identity change. Every step is idempotent, so a retried job redoes nothing.
 */
async function seedPlayer(
  row: SeedPlayerRow,
  index: number,
  season: string,
  run: ReturnType<typeof commandRunner>,
): Promise<RowError | undefined> {
  const { platformId } = row;
  const freshClaims: [PlayerIdentifierKind, number][] = [];
  const release = (kind: PlayerIdentifierKind, value: number) =>
    run(playerIdentifierDecider, playerIdentifierId(kind, value), {
      type: 'ReleasePlayerIdentifier',
      data: { kind, value, platformId },
    });

  for (const [kind, value] of identifiersOf(row)) {
    const claimed = await run(playerIdentifierDecider, playerIdentifierId(kind, value), {
      type: 'ClaimPlayerIdentifier',
      data: { kind, value, platformId },
    });
    if (!claimed.accepted) {
      // Give back what this row just took, so a refused player holds nothing new.
      for (const [k, v] of freshClaims) await release(k, v);
      return { index, platformId, code: `${kind.toUpperCase()}_ID_TAKEN`, message: claimed.message };
    }
    if (claimed.events.length) freshClaims.push([kind, value]);
  }

  const seeded = await run(playerDecider, platformId, {
    type: 'SeedPlayer',
    data: { platformId, identity: canonicalIdentity(row), season, stats: row.stats },
  });
  if (!seeded.accepted) return { index, platformId, code: 'COMMAND_FAILED', message: seeded.message };
  const updated = seeded.events.find((event) => event.eventType === 'PlayerUpdatedEvent')?.data as
    PlayerUpdatedEvent['data'] | undefined;
  if (updated) {
    const { previousFeedId, previousFantasyId } = updated;
    if (previousFeedId !== row.feedId) await release('feed', previousFeedId);
    if (previousFantasyId !== row.fantasyId) await release('fantasy', previousFantasyId);
  }
  return undefined;
}

/**
 * `PlayerSeeding`: the sport data GetMappedPlayers and GetTeamRatingInputByTeamId read. Sets the
 * season's rounds, then seeds each player (identity and this season's stats). Unchanged data
 * raises no event; a player whose feed id or fantasy id another player holds is refused alone.
 */
export const playerSeedingImporter: Importer<PlayerSeedingData> = {
  importerType: 'PlayerSeeding',
  description:
    "Registers or updates players (feed, league, fantasy and platform identities) and one season's stats and rounds.",
  requiredRoles: REQUIRED_ROLES,

  schema: (maxRows) =>
    Joi.object<PlayerSeedingData>({
      season: seasonYear().default(DEFAULT_SEASON),
      round: Joi.number()
        .strict()
        .integer()
        .min(1)
        .max(Joi.ref('finalRound'))
        .default(DEFAULT_ROUND)
        .messages({ 'number.max': '{{#label}} must not be after the final round' }),
      finalRound: Joi.number().strict().integer().min(1).max(ROUND_LIMIT).default(DEFAULT_FINAL_ROUND),
      players: boundedArray(
        playerSchema,
        maxRows,
        `{{#label}} holds at most ${maxRows} rows per import`,
      ).required(),
    }),

  rowCount: (data) => data.players.length,

  refuseWithoutRole(data, actor) {
    // Unvalidated: the first player's id only when it is one (a GUID), else the season's, so no
    // text of the body reaches the record.
    const platformId = receivedField(receivedRows(data, 'players')?.[0], 'platformId');
    const season = receivedField(data, 'season');
    const aggregateId = isGuid(platformId)
      ? platformId.toLowerCase()
      : seasonId(isSeasonYear(season) ? season : DEFAULT_SEASON);
    return Promise.resolve(refusedForRole(aggregateId, actor));
  },

  async run(data, context, services) {
    const { players, season } = data;
    const seasonAggregateId = seasonId(season);

    // 1. The whole batch first: the submitter's role, then keys repeated inside the batch.
    if (!hasAnyRole(context.actor.roles, REQUIRED_ROLES)) {
      return refusedForRole(players[0]?.platformId ?? seasonAggregateId, context.actor);
    }
    const duplicates = duplicatesInBatch(players);
    if (duplicates.length) {
      return batchRefused(
        `The batch repeats a platform id, feed id or fantasy id in ${duplicates.length} row(s); nothing was imported`,
        duplicates,
      );
    }
    if (context.dryRun) {
      return importOutcome({
        status: 'Completed',
        message: `Dry run: ${players.length} player(s) valid; nothing was written`,
        dryRun: { wouldCreate: players.length, wouldSkip: 0 },
      });
    }

    // 2. The season's rounds, then the players, a few at once.
    const tally = new Tally();
    const run = commandRunner(context, services, tally);
    const rounds = await run(seasonDecider, seasonAggregateId, {
      type: 'SetSeasonRound',
      data: { season, round: data.round, finalRound: data.finalRound },
    });
    if (!rounds.accepted) return processingFailed(failedAtAggregate(seasonAggregateId, rounds.message));

    let done = 0;
    await forEachLimited(
      players.map((row, index) => ({ row, index })),
      context.concurrency,
      async ({ row, index }) => {
        if (!(await context.submitter.mayContinue())) return;
        const error = await seedPlayer(row, index, season, run);
        if (error) tally.rowErrors.push(error);
        else tally.playersSeeded += 1;
        await context.onProgress(++done, players.length);
      },
      () => context.submitter.stopReason !== null,
    );

    const counts = {
      commandsExecuted: tally.commands,
      eventsGenerated: tally.events,
      aggregatesProcessed: tally.aggregates.size,
      rowErrors: [...tally.rowErrors].sort((a, b) => a.index - b.index),
    };
    const { stopReason } = context.submitter;
    if (stopReason !== null) return stoppedBySubmitter(stopReason, done, players.length, counts);
    const [first] = counts.rowErrors;
    if (first) {
      const reason = `${first.message} (${tally.playersSeeded} of ${players.length} player(s) seeded, ${counts.rowErrors.length} refused)`;
      return processingFailed(failedAtAggregate(first.platformId ?? '', reason), counts);
    }
    return importOutcome({ status: 'Completed', message: 'Import completed successfully', ...counts });
  },
};
