import { once } from 'node:events';
import { type AddressInfo, type OnReadOpts, type Socket, connect, createServer } from 'node:net';

/**
 * Two connected sockets on loopback: `dialed` (with `onread`, if given, as a rank's dialed socket
 * reads) and the server's `accepted` end. close() destroys both and the server.
 */
export async function loopbackPair(
  onread?: OnReadOpts,
): Promise<{ dialed: Socket; accepted: Socket; close: () => void }> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const connection = once(server, 'connection');
  const port = (server.address() as AddressInfo).port;
  const dialed = connect(onread === undefined ? { port, host: '127.0.0.1' } : { port, host: '127.0.0.1', onread });
  await once(dialed, 'connect');
  const [accepted] = (await connection) as [Socket];
  return {
    dialed,
    accepted,
    close: () => {
      dialed.destroy();
      accepted.destroy();
      server.close();
    },
  };
}
