import { parseBasicCredentials } from '../../ingress/auth/basic-header';

const basic = (credentials: string, scheme = 'Basic') =>
  `${scheme} ${Buffer.from(credentials, 'utf8').toString('base64')}`;

describe('parseBasicCredentials', () => {
  it('When the header is well formed, then the user id and password are returned', () => {
    expect(parseBasicCredentials(basic('ada@example.com:s3cret'))).toEqual({
      userId: 'ada@example.com',
      password: 's3cret',
    });
  });

  it('When the password contains colons, then the user id ends at the first colon (RFC 7617)', () => {
    expect(parseBasicCredentials(basic('ada@example.com:a:b::c:'))).toEqual({
      userId: 'ada@example.com',
      password: 'a:b::c:',
    });
  });

  it('When the scheme is written in another case, then it is still accepted', () => {
    const expected = { userId: 'ada', password: 'pw' };
    expect(parseBasicCredentials(basic('ada:pw', 'basic'))).toEqual(expected);
    expect(parseBasicCredentials(basic('ada:pw', 'BASIC'))).toEqual(expected);
    expect(parseBasicCredentials(basic('ada:pw', 'bAsIc'))).toEqual(expected);
  });

  it('When the password is UTF-8, then it is decoded as UTF-8', () => {
    expect(parseBasicCredentials(basic('jürgen@example.com:pässwörd€🔑'))).toEqual({
      userId: 'jürgen@example.com',
      password: 'pässwörd€🔑',
    });
  });

  it('When the decoded credentials have no colon, then the result is null', () => {
    expect(parseBasicCredentials(basic('ada-without-colon'))).toBeNull();
  });

  it('When the user id or the password is empty, then the result is null', () => {
    expect(parseBasicCredentials(basic(':pw'))).toBeNull();
    expect(parseBasicCredentials(basic('ada:'))).toBeNull();
    expect(parseBasicCredentials(basic(':'))).toBeNull();
  });

  it('When the credentials are not base64, then the result is null', () => {
    expect(parseBasicCredentials('Basic ada:pw')).toBeNull();
    expect(parseBasicCredentials('Basic !!!!')).toBeNull();
    expect(parseBasicCredentials('Basic ')).toBeNull();
    expect(parseBasicCredentials('Basic')).toBeNull();
  });

  it('When the scheme is Bearer, then the result is null', () => {
    expect(parseBasicCredentials(basic('ada:pw', 'Bearer'))).toBeNull();
    expect(parseBasicCredentials('Bearer eyJhbGciOiJIUzI1NiJ9.e30.c2ln')).toBeNull();
  });

  it('When there is no header, then the result is null', () => {
    expect(parseBasicCredentials(undefined)).toBeNull();
    expect(parseBasicCredentials('')).toBeNull();
  });
});
