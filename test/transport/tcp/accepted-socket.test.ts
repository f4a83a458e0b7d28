import assert from 'node:assert/strict';
import { once } from 'node:events';
import { test } from 'node:test';
import { readableInPlace } from '../../../src/transport/tcp/accepted-socket.js';
import { intakeOf, readExactly, readNow } from '../../../src/transport/tcp/intake.js';
import { waitFor } from '../../harness/wait-for.js';
import { loopbackPair } from './loopback-pair.js';

test('an accepted socket re-made after its handshake reads into the given memory, bytes read before it first and in order, and still writes and closes', async () => {
  const { dialed, accepted, close } = await loopbackPair();
  try {
    const intake = intakeOf(accepted);
    // The handshake takes 4 bytes; the 3 behind them in the same write were read by Node already.
    dialed.write(Buffer.from([1, 2, 3, 4, 5, 6, 7]));
    assert.deepEqual([...(await readExactly(accepted, intake, 4, 5000))], [1, 2, 3, 4]);
    const memory = new Uint8Array(64);
    const { socket, intake: adopted } = readableInPlace(accepted, intake, memory);
    assert.notEqual(socket, accepted);
    assert.equal(accepted.destroyed, true);
    const seen: number[] = [];
    const landed: boolean[] = [];
    adopted.attach((bytes) => {
      seen.push(...bytes);
      landed.push(bytes.buffer === memory.buffer);
    });
    assert.deepEqual(seen, [5, 6, 7]);
    socket.resume();
    dialed.write(Buffer.from([8, 9]));
    await waitFor(() => seen.length === 5, { what: 'the bytes written after the hand-over' });
    assert.deepEqual(seen, [5, 6, 7, 8, 9]);
    assert.deepEqual(landed, [false, true], 'Node read the later bytes into the given memory');
    // An in-place read works on it as on a dialed socket: spun without a turn of the event loop,
    // so Node's own read cannot take the byte first.
    dialed.write(Buffer.from([10]));
    let read: number | undefined = 0;
    for (let i = 0; i < 1_000_000 && read === 0; i++) read = readNow(socket, memory, adopted);
    assert.equal(read, 1);
    assert.equal(seen.at(-1), 10);
    const back: Buffer[] = [];
    dialed.on('data', (chunk: Buffer) => back.push(chunk));
    socket.end(Buffer.from([42]));
    await once(dialed, 'end');
    assert.deepEqual([...Buffer.concat(back)], [42]);
    dialed.end();
    await once(socket, 'close');
  } finally {
    close();
  }
});
