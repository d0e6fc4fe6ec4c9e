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

  it('When the decoded credentials are not UTF-8, then the result is null rather than a U+FFFD lookalike', () => {
    const bytes = (...parts: (string | number[])[]) =>
      `Basic ${Buffer.concat(parts.map((part) => Buffer.from(part))).toString('base64')}`;
    expect(parseBasicCredentials(bytes('ada@example.com:pass', [0xff], 'word'))).toBeNull();
    expect(parseBasicCredentials(bytes('caf', [0xe9], '@example.com:pw'))).toBeNull(); // Latin-1 é
    expect(parseBasicCredentials(bytes('ada@example.com:', [0xc3]))).toBeNull(); // truncated sequence
    expect(parseBasicCredentials(bytes('ada@example.com:', [0xed, 0xa0, 0x80]))).toBeNull(); // a surrogate
  });

  it('When the credentials start with a byte order mark, then it is kept as part of the user id', () => {
    expect(parseBasicCredentials(basic('\uFEFFada@example.com:pw'))).toEqual({
      userId: '\uFEFFada@example.com',
      password: 'pw',
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
