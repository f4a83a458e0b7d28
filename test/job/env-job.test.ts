import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jobFromEnv } from '../../src/job/env-job.js';

test('torchrun, Open MPI and Slurm variables describe the job; torchrun wins when several are set', () => {
  assert.equal(jobFromEnv({}), undefined);
  const torch = jobFromEnv({
    RANK: '3',
    WORLD_SIZE: '8',
    LOCAL_RANK: '1',
    LOCAL_WORLD_SIZE: '2',
    MASTER_ADDR: '10.0.0.1',
    MASTER_PORT: '29500',
    OMPI_COMM_WORLD_RANK: '0',
    OMPI_COMM_WORLD_SIZE: '8',
  })!;
  assert.deepEqual(
    [torch.source, torch.rank, torch.size, torch.localRank, torch.localSize, torch.masterAddr, torch.masterPort],
    ['torchrun', 3, 8, 1, 2, '10.0.0.1', 29500],
  );
  const mpi = jobFromEnv({
    OMPI_COMM_WORLD_RANK: '2',
    OMPI_COMM_WORLD_SIZE: '4',
    OMPI_COMM_WORLD_LOCAL_RANK: '0',
    TSCCL_STORE: '[::1]:1234',
  })!;
  assert.deepEqual([mpi.source, mpi.rank, mpi.size, mpi.masterAddr, mpi.masterPort], ['mpirun', 2, 4, '::1', 1234]);
  const slurm = jobFromEnv({
    SLURM_PROCID: '1',
    SLURM_NTASKS: '2',
    SLURM_LOCALID: '1',
    MASTER_ADDR: 'h',
    MASTER_PORT: '1',
    TSCCL_JOB_TOKEN: 's',
  })!;
  assert.deepEqual([slurm.source, slurm.rank, slurm.localRank, slurm.token], ['slurm', 1, 1, 's']);
});

test('a multi-rank job without a store address, or with a rank past its size, is refused clearly', () => {
  assert.throws(
    () => jobFromEnv({ RANK: '0', WORLD_SIZE: '2' }),
    /A 2-rank job \(from torchrun's RANK\/WORLD_SIZE\) needs MASTER_ADDR and MASTER_PORT, or TSCCL_STORE=host:port/,
  );
  assert.throws(
    () => jobFromEnv({ RANK: '4', WORLD_SIZE: '4', MASTER_ADDR: 'x', MASTER_PORT: '1' }),
    /RANK=4 must be below WORLD_SIZE=4/,
  );
  assert.throws(() => jobFromEnv({ RANK: 'one', WORLD_SIZE: '4' }), /RANK=one must be a non-negative integer/);
  assert.equal(jobFromEnv({ RANK: '0', WORLD_SIZE: '1' })!.size, 1);
});

test('a store address that is not host:port with a real port is refused, naming the variable', () => {
  const job = { RANK: '0', WORLD_SIZE: '2' };
  for (const store of ['127.0.0.1', '127.0.0.1:abc', ':29500', '[::1]', 'h:0', 'h:70000', 'h:29500x']) {
    assert.throws(
      () => jobFromEnv({ ...job, TSCCL_STORE: store }),
      (err: Error & { code: string }) =>
        err.code === 'TSCCL_ERR_INVALID_ARGUMENT' &&
        err.message.startsWith(`TSCCL_STORE=${store} must be host:port with a port from 1 to 65535`),
      store,
    );
  }
  assert.throws(
    () => jobFromEnv({ ...job, MASTER_ADDR: 'h', MASTER_PORT: '99999' }),
    /MASTER_PORT=99999 must be a port, at most 65535/,
  );
});

test("half of torchrun's description is refused, not run as a world of one; an allocation's SLURM_NTASKS alone is no job", () => {
  assert.throws(() => jobFromEnv({ WORLD_SIZE: '2', MASTER_ADDR: '127.0.0.1', MASTER_PORT: '29500' }), {
    code: 'TSCCL_ERR_INVALID_ARGUMENT',
    message: /WORLD_SIZE is set but RANK is not/,
  });
  assert.throws(() => jobFromEnv({ RANK: '1' }), {
    code: 'TSCCL_ERR_INVALID_ARGUMENT',
    message: /RANK is set but WORLD_SIZE is not/,
  });
  assert.equal(jobFromEnv({ SLURM_NTASKS: '4' }), undefined);
});
