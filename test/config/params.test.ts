import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PARAMS, checkParams, closestName, paramProblems, unknownParams } from '../../src/config/params.js';

test('every variable of the table accepts its own default', () => {
  const env = Object.fromEntries(PARAMS.map((p) => [p.name, p.defaultValue]));
  assert.deepEqual(paramProblems(env), []);
});

test('values a variable cannot take are refused together, each named with what it expects', () => {
  const env = {
    TSCCL_DEBUG: 'VERBOSE',
    TSCCL_KERNEL: 'wasm',
    TSCCL_CHECKSUM: 'yes',
    TSCCL_SOCKET_FAMILY: 'AF_UNIX',
    TSCCL_DEBUG_CHECK: '2',
    TSCCL_ALLOW_INSECURE: 'yes',
    TSCCL_SPIN_YIELD: '2',
    TSCCL_TIMEOUT_MS: '1.5',
    TSCCL_SPIN_US: '-3',
    TSCCL_NSOCKS_PERPEER: '0',
    TSCCL_STORE: 'garbage',
    TSCCL_ALGO: 'ring',
    TSCCL_PROTO: 'LL128',
  };
  const problems = paramProblems(env);
  assert.deepEqual(problems.map((p) => p.name).sort(), Object.keys(env).sort());
  assert.deepEqual(
    problems.find((p) => p.name === 'TSCCL_DEBUG'),
    { name: 'TSCCL_DEBUG', value: 'VERBOSE', expected: 'one of NONE, WARN, INFO' },
  );
  assert.match(problems.find((p) => p.name === 'TSCCL_NSOCKS_PERPEER')!.expected, /at least 1/);
  assert.throws(
    () => checkParams(env),
    (err: { code: string; message: string; details: { argument: string } }) =>
      err.code === 'TSCCL_ERR_INVALID_ARGUMENT' &&
      /TSCCL_KERNEL=wasm is not valid: expected one of auto, js/.test(err.message) &&
      /TSCCL_STORE=garbage is not valid: expected host:port/.test(err.message) &&
      err.details.argument === 'TSCCL_TIMEOUT_MS',
  );
});

test('accepted spellings: levels and protocols in any case, IPv6 stores, NCCL-style algorithm lists, empty means default', () => {
  assert.deepEqual(
    paramProblems({
      TSCCL_DEBUG: 'info',
      TSCCL_PROTO: 'LL',
      TSCCL_STORE: '[fe80::1]:29500',
      TSCCL_ALGO: 'allreduce:ring;broadcast:binomial_tree',
      TSCCL_CHECKSUM: '',
    }),
    [],
  );
  assert.doesNotThrow(() => checkParams({}));
});

test("unknown TSCCL_ variables are found with the closest real name; the launcher's own and other prefixes are not", () => {
  assert.deepEqual(
    unknownParams({ TSCCL_TIMEOUTMS: '5', TSCCL_THREADS_PER_PROC: '2', NCCL_DEBUG: 'INFO', TSCCL_DEBUG: 'INFO' }),
    [{ name: 'TSCCL_TIMEOUTMS', closest: 'TSCCL_TIMEOUT_MS' }],
  );
  assert.equal(
    closestName(
      'TSCCL_CHEKSUM',
      PARAMS.map((p) => p.name),
    ),
    'TSCCL_CHECKSUM',
  );
});
