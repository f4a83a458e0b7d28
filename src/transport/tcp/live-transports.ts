/** What the exit hooks need of an open transport. */
export interface LiveTransport {
  close(): Promise<void>;
  /** Tells every peer, synchronously, that this process is exiting and how far it got. */
  announceExit(): void;
}

const live = new Set<LiveTransport>();
let exitHooksInstalled = false;

/** Closes every TCP transport of this thread gracefully; a rank's runner calls it when the script ends. */
export async function closeLiveTransports(): Promise<void> {
  await Promise.all([...live].map((t) => t.close()));
}

/** Counts a transport as open until `forgetLive`; the first one installs the process's exit hooks. */
export function registerLive(transport: LiveTransport): void {
  live.add(transport);
  if (exitHooksInstalled) return;
  exitHooksInstalled = true;
  // A script that ends without destroying its communicators still leaves politely.
  process.once('beforeExit', () => {
    void closeLiveTransports();
  });
  // One that calls process.exit (or throws) leaves at once: say how far it got, so that peers
  // still in a call it had ended finish it, and only later calls fail. Sockets with nothing
  // queued write synchronously, so the frame is out before the process is gone.
  process.once('exit', announceExits);
}

/** Tells every peer of every open transport of this thread, synchronously, that it is leaving. */
export function announceExits(): void {
  for (const t of live) t.announceExit();
}

export function forgetLive(transport: LiveTransport): void {
  live.delete(transport);
}
