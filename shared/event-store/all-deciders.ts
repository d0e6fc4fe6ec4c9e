import { fantasyTeamDecider } from '../fantasy-team/fantasy-team.decider';
import { playerDecider } from '../sport/player.decider';
import { playerIdentifierDecider } from '../sport/player-identifier.decider';
import { seasonDecider } from '../sport/season.decider';
import { userDecider } from '../user/user.decider';
import { webhookSubscriptionDecider } from '../webhook-subscription/webhook-subscription.decider';

/** Every aggregate's decider: the event store keeps their snapshots in their current shape. */
export const ALL_DECIDERS = [
  userDecider,
  fantasyTeamDecider,
  seasonDecider,
  playerDecider,
  playerIdentifierDecider,
  webhookSubscriptionDecider,
] as const;
