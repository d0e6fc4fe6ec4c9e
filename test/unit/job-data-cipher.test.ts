import { JobDataCipher, UnreadableJobData } from '../../shared/importers/job-data-cipher';

const SECRET = 'a-data-encryption-key-of-at-least-32-chars';
const JOB = '1b4e28ba-2fa1-11d2-883f-0016d3cca427';
const DATA = { users: [{ email: 'a@example.com', password: 'correct horse battery staple' }] };

describe('JobDataCipher (AES-256-GCM, HKDF-derived key)', () => {
  const cipher = new JobDataCipher(SECRET);

  it('When data is sealed, then the text holds none of it and opens to the same value', () => {
    const sealed = cipher.seal(DATA, JOB);
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain('correct horse');
    expect(Buffer.from(sealed.slice(3), 'base64url').toString('latin1')).not.toContain('correct horse');
    expect(cipher.open(sealed, JOB)).toEqual(DATA);
  });

  it('When the same data is sealed twice, then the texts differ (a fresh IV each time)', () => {
    expect(cipher.seal(DATA, JOB)).not.toBe(cipher.seal(DATA, JOB));
  });

  it('When sealed data is opened under another job id, with another key, or altered, then it is refused', () => {
    const sealed = cipher.seal(DATA, JOB);
    expect(() => cipher.open(sealed, '00000000-0000-0000-0000-000000000000')).toThrow(UnreadableJobData);
    expect(() => new JobDataCipher(`${SECRET}!`).open(sealed, JOB)).toThrow(UnreadableJobData);
    const bytes = Buffer.from(sealed.slice(3), 'base64url');
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] ?? 0) ^ 1;
    expect(() => cipher.open(`v1.${bytes.toString('base64url')}`, JOB)).toThrow(UnreadableJobData);
    expect(() => cipher.open('plain text', JOB)).toThrow(UnreadableJobData);
  });

  it('When the key was rotated and the old secret is still configured, then data sealed before opens', () => {
    const before = new JobDataCipher('the-old-jwt-secret-of-at-least-32-characters');
    const sealed = before.seal(DATA, JOB);
    const after = new JobDataCipher(SECRET, ['the-old-jwt-secret-of-at-least-32-characters']);
    expect(after.open(sealed, JOB)).toEqual(DATA);
    expect(after.open(after.seal(DATA, JOB), JOB)).toEqual(DATA);
  });
});
