import assert from 'node:assert/strict';
import { test } from 'node:test';
import { socketFd } from '../../../src/transport/tcp/socket-syscall.js';
import { loopbackPair } from './loopback-pair.js';

test("socketFd: a connected socket's descriptor, the same on every read; none once the socket is destroyed", async () => {
  const { dialed, accepted, close } = await loopbackPair();
  try {
    const fd = socketFd(dialed);
    assert.ok(fd !== undefined && fd >= 0);
    assert.equal(socketFd(dialed), fd);
    assert.notEqual(socketFd(accepted), fd);
    dialed.destroy();
    // Its number may belong to another file soon: it must not be handed out again.
    assert.equal(socketFd(dialed), undefined);
  } finally {
    close();
  }
});
