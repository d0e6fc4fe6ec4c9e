/** Rejection texts of the webhook subscription aggregate: one source for the decider and the tests. */
export const WEBHOOK_MESSAGES = {
  alreadyExists: 'Webhook subscription already exists',
  nonExistent: 'Webhook subscription does not exist',
  deleted: 'Webhook subscription was deleted',
  alreadyDisabled: 'Webhook subscription is already disabled',
  alreadyEnabled: 'Webhook subscription is already enabled',
  alreadySuspended: 'Webhook subscription is already suspended',
  suspendNotEnabled: 'Only an enabled webhook subscription is suspended',
  suspendOtherOwner: 'Webhook subscription has another owner now',
  suspendByServiceOnly: 'Only the service suspends a webhook subscription',
  nothingToUpdate: 'Give at least one of url, eventTypes, description to update',
  disabledReplay: 'Enable the webhook subscription before replaying events to it',
  replayFromFuture: 'from must not be in the future',
  replayFromTrimmed:
    'from is older than the event log keeps (LOG_RETENTION): events after it were trimmed, so a replay from there would skip them. Replay from a later time.',
} as const;

/** Why an owner no longer holds a subscription's authority (owner-authority.ts decides which). */
export type OwnerLapse = 'disabled' | 'deleted' | 'notAdmin';

/** The reason a suspension gives: names the owner and the account change. */
export function ownerLapseReason(ownerUserId: string, lapse: OwnerLapse): string {
  const change = { disabled: 'was disabled', deleted: 'was deleted', notAdmin: 'no longer holds Admin' }[
    lapse
  ];
  return `Owner ${ownerUserId} ${change}`;
}
