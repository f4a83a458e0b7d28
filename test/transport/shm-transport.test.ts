import { allocateMailbox, mailboxBytes } from '../../src/comm/shm-backend.js';
import { Arena } from '../../src/memory/arena.js';
import { QUEUED_CHANNELS } from '../../src/transport/channels.js';
import { ShmTransport } from '../../src/transport/shm/shm-transport.js';
import { transportConformance } from './conformance.js';

// Both endpoints live in this thread on one arena: waits are asynchronous, so they interleave.
transportConformance('shm', async () => {
  const arena = Arena.create();
  const mailboxes = [allocateMailbox(arena, 2), allocateMailbox(arena, 2)];
  const bytes = mailboxBytes(2);
  return {
    a: new ShmTransport(arena, 0, mailboxes, bytes, QUEUED_CHANNELS),
    b: new ShmTransport(arena, 1, mailboxes, bytes, QUEUED_CHANNELS),
    sendable: (n) => arena.bytes(arena.allocate(Math.max(n, 1)), n),
    readsInPlace: true,
    close: async () => {},
  };
});
