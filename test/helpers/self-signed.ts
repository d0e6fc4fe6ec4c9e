import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * A self-signed certificate for localhost and 127.0.0.1, valid for a day, made by openssl in `dir`
 * as cert.pem and key.pem (the names deploy/nginx.conf reads). Resolves with the certificate, which
 * a client trusts as its CA.
 */
export function selfSignedCertificate(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const made = spawnSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-keyout',
      path.join(dir, 'key.pem'),
      '-out',
      path.join(dir, 'cert.pem'),
    ],
    { encoding: 'utf8' },
  );
  if (made.status !== 0) throw new Error(`openssl could not make a certificate: ${made.stderr}`);
  return readFileSync(path.join(dir, 'cert.pem'), 'utf8');
}
