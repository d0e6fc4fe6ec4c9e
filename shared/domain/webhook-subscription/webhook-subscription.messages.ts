/** Rejection texts of the webhook subscription aggregate: one source for the decider and the tests. */
export const WEBHOOK_MESSAGES = {
  alreadyExists: 'Webhook subscription already exists',
  nonExistent: 'Webhook subscription does not exist',
  deleted: 'Webhook subscription was deleted',
  alreadyDisabled: 'Webhook subscription is already disabled',
  alreadyEnabled: 'Webhook subscription is already enabled',
  nothingToUpdate: 'Give at least one of url, eventTypes, description to update',
  disabledReplay: 'Enable the webhook subscription before replaying events to it',
  replayFromFuture: 'from must not be in the future',
  replayFromTrimmed:
    'from is older than the event log keeps (LOG_RETENTION): events after it were trimmed, so a replay from there would skip them. Replay from a later time.',
} as const;
