import { EMAIL_PATTERN, emailAddress } from '../../shared/validation';

const pattern = new RegExp(EMAIL_PATTERN, 'u');
const schema = emailAddress();
const accepted = (value: string) => schema.validate(value).error === undefined;

describe('The documented e-mail pattern', () => {
  it.each([
    'someone@example',
    '"a b"@example.com',
    'a@[192.0.2.1]',
    'a@192.0.2.1',
    'a..b@example.com',
    'a@-x.example',
    'a@x_y.example',
    `${'x'.repeat(65)}@example.com`,
  ])('When %s is checked, then the pattern and the service both refuse it', (value) => {
    expect([pattern.test(value), accepted(value)]).toEqual([false, false]);
  });

  it.each([
    'someone@example.com',
    "o'neil+tag@sub.example.org",
    '  padded@example.com ',
    'jörg@exämple.de',
    `${'x'.repeat(64)}@example.com`,
  ])('When %s is checked, then the pattern and the service both accept it', (value) => {
    expect([pattern.test(value), accepted(value)]).toEqual([true, true]);
  });
});
