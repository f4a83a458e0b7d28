import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';

/**
 * Proof that a connection belongs to the job: the server sends a fresh nonce, the client answers
 * HMAC-SHA256(job token, purpose | nonce). The token never crosses the wire, and a recorded
 * answer is useless against the next nonce.
 */
export const NO_TOKEN_MAC = new Uint8Array(32);

export function newNonce(): Uint8Array {
  return randomBytes(16);
}

export function newJobToken(): string {
  return randomBytes(32).toString('hex');
}

export function proveToken(token: string, purpose: string, nonce: Uint8Array): Uint8Array {
  return createHmac('sha256', token).update(purpose).update(nonce).digest();
}

export function checkProof(token: string, purpose: string, nonce: Uint8Array, mac: Uint8Array): boolean {
  const expected = proveToken(token, purpose, nonce);
  return mac.byteLength === expected.byteLength && timingSafeEqual(expected, mac);
}

/** Loopback peers (127.0.0.0/8, ::1, IPv4-mapped loopback) may join a job without a token. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  const plain = address.startsWith('::ffff:') ? address.slice(7) : address;
  if (isIP(plain) === 4) return plain.startsWith('127.');
  return plain === '::1';
}

/** The loopback address to use for a loopback master address: IPv6 stays IPv6. */
export function loopbackFor(address: string): string {
  return address === '::1' ? '::1' : '127.0.0.1';
}

/** The wildcard address to serve on for a master address of that family. */
export function anyAddressFor(address: string): string {
  return isIP(address) === 6 ? '::' : '0.0.0.0';
}
