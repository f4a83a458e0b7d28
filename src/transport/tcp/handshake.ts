import type { Socket } from 'node:net';
import { ErrorCode, TscclError } from '../../errors.js';
import { NO_TOKEN_MAC, checkProof, isLoopbackAddress, newNonce, proveToken } from '../../security/job-token.js';
import { type Intake, intakeOf, readExactly } from './intake.js';

/**
 * The handshake on every new socket of a mesh, before any frame. The accepting rank speaks first:
 *
 *   greeting (accepting -> dialing), 22 bytes:
 *     0  4 bytes  magic "TSCH" (latin1)
 *     4  u8       handshake version (1)
 *     5  u8       1 if the job has a token (the dialer must prove it), else 0
 *     6  16 bytes nonce, fresh per socket
 *
 *   hello (dialing -> accepting), 56 bytes, integers little-endian:
 *     0  32 bytes HMAC of the nonce under the job token (proveToken), or NO_TOKEN_MAC
 *    32  u32      dialer's rank
 *    36  u32      communicator id (commIdOf its name)
 *    40  u32      lane: which of the pair's sockets this is
 *    44  u32      sockets per peer the dialer uses (TSCCL_NSOCKS_PERPEER)
 *    48  u32      resume from, low 32 bits: 0 for a new socket; else it replaces the lane's broken
 *    52  u32      resume from, high bits    socket, and the first frame it carries is this number
 *
 *   answer (accepting -> dialing), integers little-endian:
 *     0  u8       1, accepted; 2, the lane cannot go on from that frame (the accepting side no
 *                 longer holds it). A socket refused for any other reason is closed.
 *   and after an acceptance:
 *     1  u32      resume from, low 32 bits: 0 for a new socket; else the first frame the accepting
 *     5  u32      resume from, high bits    side needs on this lane (both ranks write each socket)
 *
 *   confirmation (dialing -> accepting), 1 byte, only on a socket that replaces a broken one:
 *     1, going on; 2, the dialing side cannot go on from the frame the answer asked for
 */
const MAGIC = 'TSCH';
const VERSION = 3;
const GREETING_BYTES = 22;
const GREETING = { magic: 0, version: 4, tokenRequired: 5, nonce: 6 } as const;
const HELLO_BYTES = 56;
const HELLO = { mac: 0, rank: 32, commId: 36, lane: 40, lanes: 44, resumeLow: 48, resumeHigh: 52 } as const;
const MAC_BYTES = 32;
export const HELLO_ANSWERS = { ACCEPTED: 1, CANNOT_RESUME: 2 } as const;
const ACCEPTANCE_BYTES = 9;
const ACCEPTANCE = { answer: 0, resumeLow: 1, resumeHigh: 5 } as const;
const ACCEPTED = HELLO_ANSWERS.ACCEPTED;
/** What the token's HMAC is bound to, so a proof for another tsccl service is worthless here. */
const PURPOSE = 'tsccl-transport';

/** What both sides check a socket against. */
export interface HandshakeOptions {
  /** This rank. */
  readonly rank: number;
  readonly nranks: number;
  readonly token?: string;
  /** Accept peers without a token from non-loopback addresses. */
  readonly allowInsecureRemote?: boolean;
  readonly commId: number;
  /** Sockets per pair of ranks. */
  readonly lanes: number;
  readonly timeoutMs: number;
}

/** A socket whose dialer proved the token and named its rank and lane. */
export interface Hello {
  readonly peer: number;
  readonly lane: number;
  readonly intake: Intake;
  /** 0 for a new socket; else the number of the first frame this socket, replacing a broken one, carries. */
  readonly resumeFrom: number;
}

/**
 * The accepting side: greets, reads the hello and checks token, communicator and lane count.
 * Rejects with why the socket must be refused; the caller answers with `acceptHello`.
 */
export async function checkHello(socket: Socket, options: HandshakeOptions): Promise<Hello> {
  if (options.token === undefined && !options.allowInsecureRemote && !isLoopbackAddress(socket.remoteAddress)) {
    throw new Error('the job has no token, so only loopback peers may join');
  }
  const nonce = newNonce();
  const greeting = Buffer.alloc(GREETING_BYTES);
  greeting.write(MAGIC, GREETING.magic, 'latin1');
  greeting.writeUInt8(VERSION, GREETING.version);
  greeting.writeUInt8(options.token === undefined ? 0 : 1, GREETING.tokenRequired);
  greeting.set(nonce, GREETING.nonce);
  socket.write(greeting);
  const intake = intakeOf(socket);
  const hello = await readExactly(socket, intake, HELLO_BYTES, options.timeoutMs);
  const mac = hello.subarray(HELLO.mac, HELLO.mac + MAC_BYTES);
  const ok =
    options.token === undefined
      ? Buffer.from(mac).equals(NO_TOKEN_MAC)
      : checkProof(options.token, PURPOSE, nonce, mac);
  if (!ok) throw new Error('wrong job token');
  if (hello.readUInt32LE(HELLO.commId) !== options.commId) throw new Error('it belongs to another communicator');
  const lanes = hello.readUInt32LE(HELLO.lanes);
  if (lanes !== options.lanes)
    throw new Error(
      `it uses ${lanes} sockets per peer and this rank ${options.lanes}: set the same TSCCL_NSOCKS_PERPEER on every rank`,
    );
  return {
    peer: hello.readUInt32LE(HELLO.rank),
    lane: hello.readUInt32LE(HELLO.lane),
    intake,
    resumeFrom: hello.readUInt32LE(HELLO.resumeLow) + hello.readUInt32LE(HELLO.resumeHigh) * 2 ** 32,
  };
}

/** Tells the dialer its socket is in, and from which frame on this side reads it (0: a new socket). */
export function acceptHello(socket: Socket, resumeFrom = 0): void {
  const answer = Buffer.alloc(ACCEPTANCE_BYTES);
  answer.writeUInt8(ACCEPTED, ACCEPTANCE.answer);
  answer.writeUInt32LE(resumeFrom % 2 ** 32, ACCEPTANCE.resumeLow);
  answer.writeUInt32LE(Math.floor(resumeFrom / 2 ** 32), ACCEPTANCE.resumeHigh);
  socket.write(answer);
}

/** Why `rank` lost `peer`: the peer cannot write socket `lane`'s frames from `frame` on again. */
export function peerCannotResume(rank: number, peer: number, lane: number, frame: number): string {
  return `Rank ${rank} lost its connection to rank ${peer}, and rank ${peer} cannot go on with socket ${lane} from frame ${frame}: it no longer holds the frames from there (a frame without a checksum is never kept)`;
}

/** A reconnecting dialer's last word: whether it can go on from the frame the acceptance asked for. */
export function confirmResume(socket: Socket, canGoOn: boolean): void {
  socket.write(Buffer.of(canGoOn ? HELLO_ANSWERS.ACCEPTED : HELLO_ANSWERS.CANNOT_RESUME));
}

/** The accepting side of a replaced socket: whether its dialer can go on (false too if it closed or said nothing in time). */
export async function resumeConfirmed(socket: Socket, intake: Intake, timeoutMs: number): Promise<boolean> {
  const word = await readExactly(socket, intake, 1, timeoutMs).catch(() => Buffer.of(0));
  return word[0] === HELLO_ANSWERS.ACCEPTED;
}

/** Tells a reconnecting dialer its lane cannot go on from the frame it asked for, and closes. */
export function refuseResume(socket: Socket): void {
  socket.end(Buffer.of(HELLO_ANSWERS.CANNOT_RESUME));
}

/**
 * The dialing side, on a connected socket: reads the greeting, proves the token, waits to be
 * accepted. Resolves to the first frame the accepting side needs on the socket (0 for a new one).
 */
export async function sayHello(
  socket: Socket,
  intake: Intake,
  to: { peer: number; lane: number; where: string; resumeFrom?: number },
  options: HandshakeOptions,
): Promise<number> {
  const { peer, lane, where } = to;
  const resumeFrom = to.resumeFrom ?? 0;
  const greeting = await readExactly(socket, intake, GREETING_BYTES, options.timeoutMs);
  if (greeting.toString('latin1', GREETING.magic, GREETING.magic + MAGIC.length) !== MAGIC)
    throw new TscclError(ErrorCode.PEER_LOST, `${where} is not a tsccl rank`, { peer });
  if (greeting.readUInt8(GREETING.tokenRequired) === 1 && options.token === undefined) {
    throw new TscclError(ErrorCode.INVALID_ARGUMENT, `Rank ${peer} requires the job token: set TSCCL_JOB_TOKEN`, {
      rank: options.rank,
      peer,
    });
  }
  const hello = Buffer.alloc(HELLO_BYTES);
  const nonce = greeting.subarray(GREETING.nonce, GREETING_BYTES);
  hello.set(options.token === undefined ? NO_TOKEN_MAC : proveToken(options.token, PURPOSE, nonce), HELLO.mac);
  hello.writeUInt32LE(options.rank, HELLO.rank);
  hello.writeUInt32LE(options.commId, HELLO.commId);
  hello.writeUInt32LE(lane, HELLO.lane);
  hello.writeUInt32LE(options.lanes, HELLO.lanes);
  hello.writeUInt32LE(resumeFrom % 2 ** 32, HELLO.resumeLow);
  hello.writeUInt32LE(Math.floor(resumeFrom / 2 ** 32), HELLO.resumeHigh);
  socket.write(hello);
  const answer = await readExactly(socket, intake, 1, options.timeoutMs).catch(() => Buffer.of(0));
  if (answer[0] === HELLO_ANSWERS.CANNOT_RESUME)
    throw new TscclError(ErrorCode.PEER_LOST, peerCannotResume(options.rank, peer, lane, resumeFrom), {
      rank: options.rank,
      peer,
      lost: 'cannot-resume',
    });
  if (answer[0] !== ACCEPTED)
    throw new TscclError(
      ErrorCode.INVALID_ARGUMENT,
      `Rank ${peer} refused rank ${options.rank}'s connection (wrong job token or communicator)`,
      { rank: options.rank, peer },
    );
  const rest = await readExactly(socket, intake, ACCEPTANCE_BYTES - 1, options.timeoutMs);
  return rest.readUInt32LE(ACCEPTANCE.resumeLow - 1) + rest.readUInt32LE(ACCEPTANCE.resumeHigh - 1) * 2 ** 32;
}
