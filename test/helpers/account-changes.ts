import { randomUUID } from 'node:crypto';

import { CREDENTIAL_FIELD, SYSTEM_ACTOR } from '../../shared/accounts/account';
import type { CoreServices } from '../../shared/core-services';
import type { AccountCommandType, UserCommand } from '../../shared/user/user.commands';
import { userDecider } from '../../shared/user/user.decider';

type AccountCommand = Extract<UserCommand, { type: AccountCommandType }>;

/**
 * Runs an account command on `userId` through the app's own command handler (the decider, the
 * fenced append, the PUBLISH every replica's account cache evicts on), as the service itself: what
 * the account commands of POST /api/command do once they are decided on. A password command also
 * stores the new password's hash, as its use case would. Throws unless the command is accepted.
 *
 * ChangePassword runs as the account itself (the decider allows no one else); the others as the
 * system actor (an Admin). Commands that restamp get a fresh stamp unless one is given: a test
 * may keep the account's stamp on purpose, to prove a rule that does not rely on the stamp.
 */
export async function changeAccount(
  services: Pick<CoreServices, 'commands' | 'hasher'>,
  userId: string,
  command: {
    readonly type: AccountCommandType;
    /** The command's data; `securityStamp`, a DisableUser's `reason` and a tombstone id default. */
    readonly data?: Readonly<Record<string, unknown>>;
  },
  options: { readonly newPassword?: string } = {},
): Promise<void> {
  const data = {
    ...(command.type === 'EnableUser' ? {} : { securityStamp: randomUUID() }),
    ...(command.type === 'DisableUser' ? { reason: null } : {}),
    ...(command.type === 'DeleteUser' ? { tombstoneId: randomUUID() } : {}),
    ...command.data,
  };
  const actor =
    command.type === 'ChangePassword'
      ? { userId, roles: ['Member'] }
      : { userId: SYSTEM_ACTOR.userId, roles: SYSTEM_ACTOR.roles };
  const credential = options.newPassword && (await services.hasher.hash(options.newPassword));
  const outcome = await services.commands.handle(userDecider, {
    aggregateId: userId,
    command: { type: command.type, data } as AccountCommand,
    context: { now: new Date(), actorUserId: actor.userId, actorRoles: actor.roles },
    metadata: { actorUserId: actor.userId, requestId: null, correlationId: 'test' },
    ...(credential ? { attachments: { [CREDENTIAL_FIELD]: credential } } : {}),
  });
  if (!outcome.accepted) throw new Error(`${command.type} refused: ${outcome.message}`);
}
