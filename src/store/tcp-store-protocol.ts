import { ErrorCode, TscclError } from '../errors.js';
import { MAX_KEY_BYTES, MAX_VALUE_BYTES } from './store.js';

/**
 * Wire protocol of the TCP store (little-endian throughout).
 *
 * On connect the server sends a greeting:  "TSST" | u8 version | u8 authRequired | 16-byte nonce.
 * Then both sides exchange frames:         u32 bodyLength | body
 *   request body:   u8 op     | u32 id | fields
 *   response body:  u8 status | u32 id | fields
 * where a byte string is u32 length | bytes. The first request must be AUTH, carrying
 * HMAC-SHA256(job token, "tsccl-store" | nonce), or 32 zero bytes when the server needs none.
 *
 *   op  request fields                                   OK response fields
 *   1   AUTH         mac                                   -
 *   2   SET          key, value                            -
 *   3   GET          u32 timeoutMs, key                    value
 *   4   WAIT         u32 timeoutMs, u32 n, n x key         -
 *   5   ADD          key, f64 delta                        f64 value
 *   6   COMPARE_SET  key, expected, desired                value
 *   7   DELETE       key                                   u8 existed
 *
 * Non-OK statuses carry one string, the reason. Responses may come in any order (a GET waits
 * for its key while later requests are served); the id pairs them. A frame longer than
 * MAX_FRAME_BYTES, or one that does not parse, is a protocol error: the server answers
 * INVALID where it can and closes that connection, and serves everyone else as before.
 */
export const GREETING_MAGIC = 0x54535354; // "TSST" read as big-endian bytes
export const PROTOCOL_VERSION = 1;
export const GREETING_BYTES = 22;
export const NONCE_BYTES = 16;
export const MAC_BYTES = 32;
export const MAX_FRAME_BYTES = MAX_VALUE_BYTES * 2 + MAX_KEY_BYTES + 64;

export const Op = { AUTH: 1, SET: 2, GET: 3, WAIT: 4, ADD: 5, COMPARE_SET: 6, DELETE: 7 } as const;
export type OpCode = (typeof Op)[keyof typeof Op];
export const Status = { OK: 0, TIMEOUT: 1, INVALID: 2, AUTH_FAILED: 3, NOT_AUTHENTICATED: 4 } as const;
export type StatusCode = (typeof Status)[keyof typeof Status];

export type Request =
  | { op: typeof Op.AUTH; id: number; mac: Uint8Array }
  | { op: typeof Op.SET; id: number; key: string; value: Uint8Array }
  | { op: typeof Op.GET; id: number; timeoutMs: number; key: string }
  | { op: typeof Op.WAIT; id: number; timeoutMs: number; keys: string[] }
  | { op: typeof Op.ADD; id: number; key: string; delta: number }
  | { op: typeof Op.COMPARE_SET; id: number; key: string; expected: Uint8Array; desired: Uint8Array }
  | { op: typeof Op.DELETE; id: number; key: string };

export interface Response {
  status: StatusCode;
  id: number;
  /** The raw fields after the id, decoded by the caller that knows what it asked. */
  fields: Uint8Array;
}

export function protocolError(message: string): TscclError {
  return new TscclError(ErrorCode.INVALID_ARGUMENT, `TCP store protocol error: ${message}`, { op: 'store' });
}

export function encodeGreeting(authRequired: boolean, nonce: Uint8Array): Buffer {
  const out = Buffer.alloc(GREETING_BYTES);
  out.writeUInt32BE(GREETING_MAGIC, 0);
  out.writeUInt8(PROTOCOL_VERSION, 4);
  out.writeUInt8(authRequired ? 1 : 0, 5);
  out.set(nonce, 6);
  return out;
}

export function decodeGreeting(bytes: Uint8Array): { authRequired: boolean; nonce: Uint8Array } {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (b.byteLength !== GREETING_BYTES || b.readUInt32BE(0) !== GREETING_MAGIC)
    throw protocolError('the peer is not a tsccl store (bad greeting)');
  if (b.readUInt8(4) !== PROTOCOL_VERSION)
    throw protocolError(`store protocol version ${b.readUInt8(4)}, expected ${PROTOCOL_VERSION}`);
  return { authRequired: b.readUInt8(5) === 1, nonce: b.subarray(6, 6 + NONCE_BYTES) };
}

/** Builds frames field by field. */
export class FrameWriter {
  private readonly parts: Buffer[] = [];
  private length = 0;

  u8(v: number): this {
    return this.push(Buffer.of(v));
  }
  u32(v: number): this {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v >>> 0);
    return this.push(b);
  }
  f64(v: number): this {
    const b = Buffer.alloc(8);
    b.writeDoubleLE(v);
    return this.push(b);
  }
  bytes(v: Uint8Array): this {
    this.u32(v.byteLength);
    return this.push(Buffer.from(v.buffer, v.byteOffset, v.byteLength));
  }
  string(v: string): this {
    return this.bytes(Buffer.from(v, 'utf8'));
  }

  /** The frame: length prefix, then the body. */
  frame(): Buffer {
    const head = Buffer.alloc(4);
    head.writeUInt32LE(this.length);
    return Buffer.concat([head, ...this.parts]);
  }

  private push(b: Buffer): this {
    this.parts.push(b);
    this.length += b.byteLength;
    return this;
  }
}

/** Reads fields from a frame body; throws a protocol error on truncation. */
export class FieldReader {
  private offset = 0;
  private readonly view: Buffer;

  constructor(body: Uint8Array) {
    this.view = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  }

  u8(): number {
    this.need(1);
    return this.view.readUInt8(this.offset++);
  }
  u32(): number {
    this.need(4);
    const v = this.view.readUInt32LE(this.offset);
    this.offset += 4;
    return v;
  }
  f64(): number {
    this.need(8);
    const v = this.view.readDoubleLE(this.offset);
    this.offset += 8;
    return v;
  }
  bytes(limit = MAX_VALUE_BYTES): Uint8Array {
    const length = this.u32();
    if (length > limit) throw protocolError(`a field of ${length} bytes exceeds the limit of ${limit}`);
    this.need(length);
    const out = this.view.subarray(this.offset, this.offset + length);
    this.offset += length;
    return out;
  }
  key(): string {
    const raw = this.bytes(MAX_KEY_BYTES);
    if (raw.byteLength === 0) throw protocolError('empty key');
    return Buffer.from(raw).toString('utf8');
  }
  end(): void {
    if (this.offset !== this.view.byteLength)
      throw protocolError(`${this.view.byteLength - this.offset} unexpected trailing bytes`);
  }

  private need(n: number): void {
    if (this.offset + n > this.view.byteLength) throw protocolError('truncated frame');
  }
}

/**
 * Splits a byte stream into frame bodies. Fed arbitrary chunks (one byte at a time, or many
 * frames at once); refuses a length prefix above the limit before buffering any of it.
 */
export class FrameDecoder {
  private pending: Buffer[] = [];
  private buffered = 0;
  private readonly maxFrameBytes: number;

  constructor(maxFrameBytes = MAX_FRAME_BYTES) {
    this.maxFrameBytes = maxFrameBytes;
  }

  push(chunk: Uint8Array): Buffer[] {
    this.pending.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    this.buffered += chunk.byteLength;
    const frames: Buffer[] = [];
    for (;;) {
      if (this.buffered < 4) break;
      const all = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending);
      this.pending = [all];
      const length = all.readUInt32LE(0);
      if (length > this.maxFrameBytes)
        throw protocolError(`frame of ${length} bytes exceeds the limit of ${this.maxFrameBytes}`);
      if (this.buffered < 4 + length) break;
      frames.push(Buffer.from(all.subarray(4, 4 + length)));
      const rest = all.subarray(4 + length);
      this.pending = rest.byteLength > 0 ? [rest] : [];
      this.buffered = rest.byteLength;
    }
    return frames;
  }

  /** Bytes received but not yet part of a whole frame. */
  get pendingBytes(): number {
    return this.buffered;
  }
}

export function encodeRequest(request: Request): Buffer {
  const w = new FrameWriter().u8(request.op).u32(request.id);
  switch (request.op) {
    case Op.AUTH:
      return w.bytes(request.mac).frame();
    case Op.SET:
      return w.string(request.key).bytes(request.value).frame();
    case Op.GET:
      return w.u32(request.timeoutMs).string(request.key).frame();
    case Op.WAIT: {
      w.u32(request.timeoutMs).u32(request.keys.length);
      for (const k of request.keys) w.string(k);
      return w.frame();
    }
    case Op.ADD:
      return w.string(request.key).f64(request.delta).frame();
    case Op.COMPARE_SET:
      return w.string(request.key).bytes(request.expected).bytes(request.desired).frame();
    case Op.DELETE:
      return w.string(request.key).frame();
  }
}

export function decodeRequest(body: Uint8Array): Request {
  const r = new FieldReader(body);
  const op = r.u8();
  const id = r.u32();
  let request: Request;
  switch (op) {
    case Op.AUTH:
      request = { op, id, mac: r.bytes(MAC_BYTES) };
      break;
    case Op.SET:
      request = { op, id, key: r.key(), value: r.bytes() };
      break;
    case Op.GET:
      request = { op, id, timeoutMs: r.u32(), key: r.key() };
      break;
    case Op.WAIT: {
      const timeoutMs = r.u32();
      const n = r.u32();
      if (n > 65536) throw protocolError(`WAIT for ${n} keys exceeds the limit of 65536`);
      request = { op, id, timeoutMs, keys: Array.from({ length: n }, () => r.key()) };
      break;
    }
    case Op.ADD:
      request = { op, id, key: r.key(), delta: r.f64() };
      break;
    case Op.COMPARE_SET:
      request = { op, id, key: r.key(), expected: r.bytes(), desired: r.bytes() };
      break;
    case Op.DELETE:
      request = { op, id, key: r.key() };
      break;
    default:
      throw protocolError(`unknown op ${op}`);
  }
  r.end();
  return request;
}

export function encodeResponse(status: StatusCode, id: number, fill?: (w: FrameWriter) => void): Buffer {
  const w = new FrameWriter().u8(status).u32(id);
  fill?.(w);
  return w.frame();
}

export function decodeResponse(body: Uint8Array): Response {
  const r = new FieldReader(body);
  const status = r.u8();
  if (status > Status.NOT_AUTHENTICATED) throw protocolError(`unknown status ${status}`);
  const id = r.u32();
  return { status: status as StatusCode, id, fields: body.subarray(5) };
}
