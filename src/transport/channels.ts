/**
 * Every channel number a communicator's messages travel on, owned here so that no two kinds of
 * traffic can share one. Collective schedules use channels [0, COLLECTIVE_CHANNELS); the one-shot
 * path runs instead of a schedule, never beside one, so it shares channel 0; point-to-point has a
 * channel of its own; TCP's control frames use a number no queue has.
 */
export const COLLECTIVE_CHANNELS = 1;
export const ONE_SHOT_CHANNEL = 0;
export const P2P_CHANNEL = COLLECTIVE_CHANNELS;
/** Queues per (source rank) in a shared-memory mailbox: the collective channels and point-to-point. */
export const QUEUED_CHANNELS = COLLECTIVE_CHANNELS + 1;
/** TCP only: heartbeats, goodbyes and failure announcements. */
export const CONTROL_CHANNEL = 0xffff;
