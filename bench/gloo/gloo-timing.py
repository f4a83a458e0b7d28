"""Times torch.distributed all_reduce over Gloo (TCP) the way `tsccl bench` times all_reduce:
for each size, `warmup` calls (default 5), a barrier, then the mean of `iters` back-to-back calls, averaged
over ranks. Gloo's all_reduce works in place only.
Output (rank 0): one line per size, "bytes us", for bench/peers.mjs to read.
Usage: RANK=r WORLD_SIZE=n MASTER_ADDR=127.0.0.1 MASTER_PORT=p python3 gloo-timing.py minBytes maxBytes factor iters [warmup]
"""
import sys
import time

import torch
import torch.distributed as dist


def main():
    min_bytes, max_bytes, factor, iters = (int(a) for a in sys.argv[1:5])
    warmup = int(sys.argv[5]) if len(sys.argv) > 5 else 5
    dist.init_process_group('gloo', init_method='env://')
    size = dist.get_world_size()
    data = torch.zeros(max_bytes // 4 + 1, dtype=torch.float32)
    bytes_ = min_bytes
    while bytes_ <= max_bytes:
        buf = data[: bytes_ // 4]
        for _ in range(warmup):
            dist.all_reduce(buf)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(buf)
        mine = torch.tensor([(time.perf_counter() - start) / iters], dtype=torch.float64)
        dist.all_reduce(mine)
        if dist.get_rank() == 0:
            print(f'{bytes_} {mine.item() / size * 1e6:.3f}', flush=True)
        bytes_ *= factor
    dist.destroy_process_group()


main()
