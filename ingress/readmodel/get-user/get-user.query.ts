import type { AccountService } from '../../../shared/accounts/account.service';
import { userIdForEmail } from '../../../shared/domain/user/user-id';
import { toUserView } from '../../../shared/projections/users/user-view';
import { emailAddress, guid } from '../../../shared/validation';
import { listingSchema, notFoundListing } from '../listing';
import { defineQuery, querySchema, type RegisteredQuery } from '../query-definition';
import { USER_ITEM_SCHEMA } from '../user-item';

interface GetUserBody {
  /** Exactly one of the two (the schema's xor). */
  readonly query: { readonly id?: string; readonly email?: string };
}

/**
 * `GetUser`: one account, by id or by e-mail (case-insensitively: the id is derived from the
 * normalised e-mail, ADR 0004), to a UserManager or an Admin. Read from the account's record, not
 * from a projection, so it shows a change as soon as its command was answered. A missing or
 * deleted account answers the spec's 404 listing, as a missing team does (GetFantasyTeam).
 */
export function getUserQuery(accounts: Pick<AccountService, 'findById'>): RegisteredQuery {
  return defineQuery<GetUserBody>({
    queryType: 'GetUser',
    description:
      'One account by id or e-mail (exactly one): e-mail, names, type, roles, disabled, dates, version.',
    schemes: ['Basic', 'Bearer'],
    roles: ['UserManager', 'Admin'],
    schema: querySchema<GetUserBody>('GetUser', { id: guid(), email: emailAddress() }, {}, (query) =>
      query.xor('id', 'email'),
    ),
    response: listingSchema('GetUserResult', USER_ITEM_SCHEMA),
    answersNotFoundListing: true,
    async handle({ body }) {
      const { id, email } = body.query;
      const userId = id ?? userIdForEmail(email ?? '');
      const account = await accounts.findById(userId);
      if (!account) return notFoundListing();
      return { body: { results: [toUserView(account, account.version)], totalCount: 1 } };
    },
  });
}
