import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type InterfaceAddress, selectInterfaces } from '../../../src/transport/tcp/interfaces.js';

const have: InterfaceAddress[] = [
  { name: 'lo', address: '127.0.0.1', family: 'IPv4', internal: true },
  { name: 'eth0', address: '10.1.0.5', family: 'IPv4', internal: false },
  { name: 'eth10', address: '10.2.0.5', family: 'IPv4', internal: false },
  { name: 'ib0', address: 'fe80::1', family: 'IPv6', internal: false },
  { name: 'docker0', address: '172.17.0.1', family: 'IPv4', internal: false },
];
const names = (filter: string | undefined) => selectInterfaces(filter, have).map((i) => i.name);

test('TSCCL_SOCKET_IFNAME follows NCCL_SOCKET_IFNAME: prefixes, ^ to exclude, = for exact names', () => {
  assert.deepEqual(names(undefined), ['eth0', 'eth10', 'ib0']);
  assert.deepEqual(names('eth'), ['eth0', 'eth10']);
  assert.deepEqual(names('=eth0'), ['eth0']);
  assert.deepEqual(names('ib,lo'), ['lo', 'ib0']);
  assert.deepEqual(names('^docker,lo'), ['eth0', 'eth10', 'ib0']);
  assert.deepEqual(names('^=eth0'), ['lo', 'eth10', 'ib0', 'docker0']);
  assert.throws(
    () => names('wlan'),
    /TSCCL_SOCKET_IFNAME=wlan matches no interface; this host has: lo \(127\.0\.0\.1\), eth0 \(10\.1\.0\.5\)/,
  );
});
