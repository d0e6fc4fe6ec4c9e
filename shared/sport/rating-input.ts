import type { PlayerSeasonStats } from './sport.model';

/**
 * A roster player's entry in GetTeamRatingInputByTeamId's `team` map (spec 2.3), kept ready-made
 * by the players projection for each (player, season), so a request joins text instead of parsing
 * and re-serialising 25 stats objects. Everything is fixed by the player except selectionStatus,
 * which is the team's: the entry is stored as the text before it and the text after it.
 *
 * Stored form: `<feedId>\n<before>\n<after>`. JSON.stringify never writes a raw newline, so the
 * split is unambiguous.
 */
export function ratingInputEntry(feedId: number, stats: PlayerSeasonStats): string {
  const before =
    `${JSON.stringify(String(feedId))}:{"rating":${JSON.stringify(stats.rating)},` +
    `"breakdown":${JSON.stringify(stats.breakdown)},"price":${JSON.stringify(stats.price)},"selectionStatus":`;
  const after = `,"fantasyPositions":${JSON.stringify(stats.fantasyPositions)}}`;
  return `${feedId}\n${before}\n${after}`;
}

/** A stored entry with the team's selection status filled in, and its feed id (the answer's order). */
export function completeRatingInputEntry(
  stored: string,
  selectionStatus: number,
): { feedId: number; json: string } {
  const [feedId = '', before = '', after = ''] = stored.split('\n');
  return { feedId: Number(feedId), json: `${before}${selectionStatus}${after}` };
}
