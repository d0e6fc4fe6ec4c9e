/**
 * Rejection texts of the fantasy team aggregate. The Link and Unlink texts are the spec's
 * (section 7) and clients match on them: change none of them by a character.
 */
export type TeamVerb = 'create' | 'link' | 'unlink' | 'set the roster of' | 'archive';

export const TEAM_MESSAGES = {
  nonExistent: (verb: TeamVerb) => `Cannot ${verb} non-existent team`,
  archived: (verb: TeamVerb) => `Cannot ${verb} archived team`,
  alreadyExists: 'Team already exists',
  alreadyLinked: 'Team is already linked to a fantasy identity. Unlink first before linking a new one',
  notLinked: 'Team has no linked fantasy identity',
  externalIdNotPositive: 'FantasyTeamExternalId must be positive',
  userIdNotPositive: 'FantasyUserId must be positive',
  forbidden: 'You are not allowed to act on this team.',
  rosterTooLarge: (max: number) => `A roster holds at most ${max} players`,
  rosterDuplicate: (participantId: string) =>
    `Participant ${participantId} appears more than once in the roster`,
  rosterTooMany: (status: string) => `A roster has at most one ${status}`,
  /** The service's own EraseFantasyTeamOwner, refused: nothing to pass (passed already, or no team). */
  ownerErasureNoTeam: 'Cannot pass a non-existent team to a tombstone',
  ownerErasureNotOwner: 'The team is not owned by the erased account',
  ownerTeamLimit: (max: number) =>
    `Cannot create team: an owner may hold at most ${max} teams, archived ones included`,
} as const;
