import { LOW_LATENCY_PREFIX_BYTES, TCP_ONE_SHOT_BYTES } from './tcp-low-latency.js';

/**
 * The TCP transport's tuning constants, each with the reason for its value. The measurements
 * behind them are in docs/tcp-transport.md.
 */

/** Below this, one socket carries the whole message; above, its K parts travel side by side. */
export const STRIPE_MIN_BYTES = 512 * 1024;

/**
 * What one read may take from a socket: larger reads stopped paying off at 256 KiB. One buffer
 * serves every socket of a transport: each read is handled before the next begins.
 */
export const READ_BUFFER_BYTES = 256 * 1024;

/** The largest payload a peer's frame header may announce before the stream counts as broken. */
export const MAX_PAYLOAD_BYTES = 2 ** 34;

/** How often a "still here" control frame goes out (or a third of the heartbeat timeout, if shorter). */
export const HEARTBEAT_MS = 1000;

/** How long closing waits for each peer to close its side before the socket is destroyed. */
export const LINGER_MS = 2000;

/**
 * How long a large frame may wait in its socket for its receive to be posted. Long enough for a
 * rank that receives from several peers in turn to post the next receive; it only costs time when
 * a receive comes late or never (then the frame is copied, as it would have been at once).
 */
export const HOLD_MS = 50;

/**
 * How long a frame may wait in its socket while this rank waits for one of its own sends to be
 * taken: short, since the peer may hold those bytes back in turn, but not none (an in-place
 * call's answer often comes in the turn before the write callback). Node's shortest timer.
 */
export const HOLD_WHILE_SENDING_MS = 1;

/** Frames smaller than this are buffered at once, never held: a copy costs less than a hold. */
export const HOLD_MIN_BYTES = 64 * 1024;

/**
 * The largest message sent as one copied buffer with its header (one write instead of a corked
 * writev of two): the one-shot path's largest message and its prefix.
 */
export const COPY_FRAME_MAX_BYTES = TCP_ONE_SHOT_BYTES + LOW_LATENCY_PREFIX_BYTES;

/**
 * The largest frame written straight into the socket's kernel buffer when nothing is queued
 * (direct-write.ts): the frames of small and mid-size calls, which then count as delivered before
 * their send returns. Larger frames keep Node's stream, which writes what the kernel takes and
 * the rest as the socket drains.
 */
export const DIRECT_WRITE_MAX_BYTES = 64 * 1024;

/**
 * After a frame of this size, the next frame's header is read on its own, so that its payload can
 * be read straight into a plain receive's memory instead of being copied from the read buffer.
 */
export const HEADER_FIRST_MIN_BYTES = 64 * 1024;

/**
 * The largest message whose receive polls the event loop before it sleeps: waking from epoll
 * across cores costs more than such a message takes, while larger ones stream for longer.
 */
export const POLL_MAX_BYTES = 64 * 1024;

/**
 * How long a schedule's receive of up to POLL_MAX_BYTES reads its peer's socket in place before
 * it polls the event loop: a few reads, cheaper than a turn of the loop, and no more (an empty
 * read costs ~3 us).
 */
export const SPIN_READ_MS = 0.03;

/**
 * How long a one-shot receive reads its peer's socket in place: longer than a peer's usual
 * lateness, so that one late message does not send both ranks through the event loop's slower
 * turns for the calls after it, and short enough to keep the loop's timers and signals prompt
 * (bench/RESULTS.md, "TCP: how long a one-shot receive reads in place").
 */
export const ONE_SHOT_SPIN_READ_MS = 0.2;

/** How often a polling receive asks its context whether to end: on every turn it was much of the turn's cost. */
export const POLL_CHECK_MS = 0.1;

/**
 * A receiver acknowledges a sender's checksummed frames after this many, so the sender can forget
 * them: an acknowledgement is a 48-byte frame, a 32nd of the frames.
 */
export const ACK_EVERY_FRAMES = 32;

/** How often a frame that failed its checksum is asked for again before the link fails (TSCCL_RESEND_RETRIES). */
export const RESEND_RETRIES = 3;

/**
 * Bytes of small (copied) checksummed frames a sender keeps per peer until acknowledged
 * (TSCCL_RESEND_WINDOW_BYTES): 32 such frames take at most 132 KiB, so acknowledgements free
 * them long before the window forgets one.
 */
export const RESEND_WINDOW_BYTES = 4 * 1024 * 1024;

/**
 * How long a socket that broke while its peer lives may take to be re-established
 * (TSCCL_RECONNECT_MS): long enough for a link that goes down and comes back, far below the
 * heartbeat timeout that names a silent peer lost.
 */
export const RECONNECT_MS = 10_000;

/**
 * With several network paths, a socket silent this long while its peer is heard on another has
 * lost its path and is re-established over another (reconnect.ts): heartbeats go on every socket
 * every HEARTBEAT_MS, so a live one is never silent half as long.
 */
export const PATH_SILENCE_MS = 2500;

/** How often sockets are checked for silence, where there are several paths. */
export const PATH_CHECK_MS = 250;

/** How often a socket running over another path than its own tries its own path again (failback). */
export const FAILBACK_PROBE_MS = 1000;
