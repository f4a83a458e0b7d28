import { execFileSync, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Hosts for multi-host tests: Linux network namespaces joined by a veth pair, addresses from the
 * 198.18.0.0/15 benchmarking range, reachable only inside this machine. Needs root and iproute2;
 * `unavailable()` says why not when they cannot be made, so tests skip with that reason.
 */
export interface NetnsPair {
  readonly names: [string, string];
  readonly addresses: [string, string];
  close(): void;
}

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();

export function netnsUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  try {
    ip('netns', 'add', 'tsccl-probe');
    ip('netns', 'del', 'tsccl-probe');
    return undefined;
  } catch (err) {
    return `cannot create network namespaces here: ${(err as Error).message.split('\n')[0]}`;
  }
}

/** Shapes what `dev` in namespace `ns` sends to `rate` (tc tbf). */
function shapeLink(ns: string, dev: string, rate: string): void {
  execFileSync('ip', [
    'netns',
    'exec',
    ns,
    'tc',
    'qdisc',
    'add',
    'dev',
    dev,
    'root',
    'tbf',
    'rate',
    rate,
    'burst',
    '256kb',
    'latency',
    '100ms',
  ]);
}

/**
 * Waits until a link reports carrier. A veth comes up a few hundred ms after both ends are set
 * up, and until then the kernel (and so Node's os.networkInterfaces) does not list it as running:
 * a rank starting in that window sees only loopback.
 */
function waitForCarrier(ns: string, dev: string): void {
  const deadline = Date.now() + 30_000;
  while (
    ip('-n', ns, 'link', 'show', dev).includes('NO-CARRIER') ||
    !ip('-n', ns, 'link', 'show', dev).includes('LOWER_UP')
  ) {
    if (Date.now() > deadline) throw new Error(`link ${dev} in ${ns} has no carrier after 30 s`);
    execFileSync('sleep', ['0.05']);
  }
}

/**
 * Two namespaces joined by `paths` veth links (one by default); `rateLimit` (e.g. '200mbit')
 * shapes both directions of each with tc tbf. Link p has veths tv<tag><a|c|e..> and
 * tv<tag><b|d|f..> and the subnet 198.18.(7 + p).0/24; `addresses` are those of link 0.
 */
export function createNetnsPair(tag: string, rateLimit?: string, paths = 1): NetnsPair {
  const names: [string, string] = [`tsccl-${tag}-a`, `tsccl-${tag}-b`];
  const addresses: [string, string] = ['198.18.7.1', '198.18.7.2'];
  const links = Array.from({ length: paths }, (_, p) => ({
    veths: [`tv${tag}${String.fromCharCode(97 + 2 * p)}`, `tv${tag}${String.fromCharCode(98 + 2 * p)}`],
    addresses: [`198.18.${7 + p}.1`, `198.18.${7 + p}.2`],
  }));
  for (const n of names) {
    try {
      ip('netns', 'del', n);
    } catch {
      /* not there */
    }
  }
  for (const n of names) ip('netns', 'add', n);
  for (const n of names) ip('-n', n, 'link', 'set', 'lo', 'up');
  for (const link of links) {
    const { veths } = link;
    ip('link', 'add', veths[0], 'netns', names[0], 'type', 'veth', 'peer', 'name', veths[1], 'netns', names[1]);
    names.forEach((n, i) => {
      ip('-n', n, 'addr', 'add', `${link.addresses[i]}/24`, 'dev', veths[i]);
      ip('-n', n, 'link', 'set', veths[i], 'up');
      if (rateLimit !== undefined) shapeLink(n, veths[i], rateLimit);
    });
  }
  for (const link of links)
    names.forEach((n, i) => {
      waitForCarrier(n, link.veths[i]);
    });
  return {
    names,
    addresses,
    close: () => {
      for (const n of names) {
        try {
          ip('netns', 'del', n);
        } catch {
          /* gone */
        }
      }
    },
  };
}

export interface NetnsStar {
  readonly names: string[];
  readonly addresses: string[];
  close(): void;
}

/**
 * `count` namespaces ("hosts") joined through a bridge in its own namespace, each by a veth
 * link; `rateLimit` shapes both directions of every link with tc tbf (the host side for what it
 * sends, the bridge side for what it receives), like servers on one switch.
 */
export function createNetnsStar(tag: string, count: number, rateLimit?: string): NetnsStar {
  const bridgeNs = `tsccl-${tag}-br`;
  const names = Array.from({ length: count }, (_, i) => `tsccl-${tag}-${i}`);
  const addresses = names.map((_, i) => `198.18.9.${i + 1}`);
  for (const n of [bridgeNs, ...names]) {
    try {
      ip('netns', 'del', n);
    } catch {
      /* not there */
    }
  }
  ip('netns', 'add', bridgeNs);
  ip('-n', bridgeNs, 'link', 'add', 'br0', 'type', 'bridge');
  ip('-n', bridgeNs, 'link', 'set', 'br0', 'up');
  const shape = (ns: string, dev: string) => {
    if (rateLimit !== undefined) shapeLink(ns, dev, rateLimit);
  };
  names.forEach((n, i) => {
    ip('netns', 'add', n);
    const [hostSide, bridgeSide] = [`ts${tag}${i}h`, `ts${tag}${i}b`];
    ip('link', 'add', hostSide, 'netns', n, 'type', 'veth', 'peer', 'name', bridgeSide, 'netns', bridgeNs);
    ip('-n', bridgeNs, 'link', 'set', bridgeSide, 'master', 'br0');
    ip('-n', bridgeNs, 'link', 'set', bridgeSide, 'up');
    ip('-n', n, 'link', 'set', 'lo', 'up');
    ip('-n', n, 'addr', 'add', `${addresses[i]}/24`, 'dev', hostSide);
    ip('-n', n, 'link', 'set', hostSide, 'up');
    shape(n, hostSide);
    shape(bridgeNs, bridgeSide);
  });
  names.forEach((n, i) => {
    waitForCarrier(n, `ts${tag}${i}h`);
  });
  return {
    names,
    addresses,
    close: () => {
      for (const n of [...names, bridgeNs]) {
        try {
          ip('netns', 'del', n);
        } catch {
          /* gone */
        }
      }
    },
  };
}

const tscclBin = fileURLToPath(new URL('../../../bin/tsccl.js', import.meta.url));

/** How a caller follows a node's output: `onOutput` sees all of it so far on each piece of stdout; `echo` copies both streams to this process's as they come. */
export interface NodeWatch {
  readonly onOutput?: (text: string) => void;
  readonly echo?: boolean;
}

/** Runs the tsccl CLI with `args` inside a namespace (one node of a job); resolves with its exit code and its output, both streams. */
export function tscclInNamespace(
  ns: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  watch: NodeWatch = {},
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn('ip', ['netns', 'exec', ns, process.execPath, tscclBin, ...args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      if (watch.echo) process.stdout.write(d);
      watch.onOutput?.(out);
    });
    child.stderr.on('data', (d) => {
      out += d;
      if (watch.echo) process.stderr.write(d);
    });
    child.on('exit', (code) => resolve({ code, out }));
  });
}
