"""One rank of bench/train/versus-torch.mjs: PyTorch DistributedDataParallel over Gloo training a GPT of
the same shape as tsccl/train's createGpt (token and position embeddings; pre-norm blocks of causal
self-attention and a GELU MLP; final layer norm; output projection), one intra-op thread per rank as
tsccl's ranks have. Times `steps` synchronised steps (forward, backward with DDP's bucketed all-reduces,
Adam) alternating with `steps` steps under no_sync (the same without communication), after `warm` of each.
A communication hook (DDP's own all-reduce, timed) notes when each bucket's gradients are ready; the wait
after backward is the time from the last bucket ready (backward's compute is over) to backward's return,
which DDP holds until every bucket's all-reduce has completed: tsccl/train's exposedCommMs, measured alike,
and each synchronised step's two moments are reported (waitSpans) for the job-wide measure.
Output (every rank): one line "result: {json}" with the medians in ms.
Usage: RANK=r WORLD_SIZE=n MASTER_ADDR=a MASTER_PORT=p python3 torch-ddp.py '{"dim":256,...}'
"""
import json
import math
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim, eps=1e-5)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim, eps=1e-5)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        rows, t, dim = x.shape
        head_dim = dim // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(dim, dim=2)
        q, k, v = (z.view(rows, t, self.heads, head_dim).transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        attended = (scores.masked_fill(mask, -1e9).softmax(-1) @ v).transpose(1, 2).reshape(rows, t, dim)
        x = x + self.out(attended)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate='tanh'))


class Gpt(nn.Module):
    def __init__(self, vocab, seq_len, dim, heads, layers):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Parameter(torch.randn(seq_len, dim) * 0.02)
        self.blocks = nn.ModuleList(Block(dim, heads, 4 * dim) for _ in range(layers))
        self.ln = nn.LayerNorm(dim, eps=1e-5)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        x = self.tokens(ids) + self.positions[: ids.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def main():
    a = json.loads(sys.argv[1])
    torch.set_num_threads(1)
    torch.manual_seed(0)
    dist.init_process_group('gloo', init_method='env://')
    model = Gpt(a['vocab'], a['seqLen'], a['dim'], 4, a['layers'])
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=a['bucketMb'])
    optimizer = torch.optim.Adam(ddp.parameters(), lr=1e-3)
    params = sum(p.numel() for p in model.parameters())
    world = dist.get_world_size()
    ready = []

    def timed_all_reduce(_state, bucket):
        ready.append(time.time())
        work = dist.all_reduce(bucket.buffer(), async_op=True)
        return work.get_future().then(lambda done: done.value()[0].div_(world))

    ddp.register_comm_hook(None, timed_all_reduce)
    # Per synchronised step: when backward's compute ended and when backward returned (epoch ms).
    spans = []

    def step(sync):
        ids = torch.randint(0, a['vocab'], (a['rowsPerRank'], a['seqLen'] + 1))
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        if sync:
            logits = ddp(ids[:, :-1])
            ready.clear()
            F.cross_entropy(logits.reshape(-1, a['vocab']), ids[:, 1:].reshape(-1)).backward()
            spans.append([max(ready) * 1000, time.time() * 1000])
        else:
            with ddp.no_sync():
                logits = ddp(ids[:, :-1])
                F.cross_entropy(logits.reshape(-1, a['vocab']), ids[:, 1:].reshape(-1)).backward()
        optimizer.step()
        return (time.perf_counter() - start) * 1000

    # Synchronised steps alternate with no_sync steps, so that drift in the machine's speed falls on both alike.
    times = {True: [], False: []}
    for i in range(a['warm'] + a['steps']):
        for sync in (True, False):
            ms = step(sync)
            if i >= a['warm']:
                times[sync].append(ms)
    times = {sync: statistics.median(ms) for sync, ms in times.items()}
    spans = spans[a['warm'] :]
    exposed = statistics.median(end - compute_end for compute_end, end in spans)
    result = {
        'params': params,
        'stepMs': times[True],
        'noSyncStepMs': times[False],
        'exposedCommMs': exposed,
        'waitSpans': spans,
    }
    print('result: ' + json.dumps(result), flush=True)
    dist.destroy_process_group()


main()
