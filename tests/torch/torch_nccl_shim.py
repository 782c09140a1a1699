# SPDX-License-Identifier: Apache-2.0
"""PyTorch through an NCCL library, as a job under torchrun: run it with NCCL's own library and
with gicl's libnccl.so.2 (LD_PRELOAD, which PyTorch's RPATH to its NCCL does not stop) and
compare.

    torchrun --nproc_per_node=N tests/torch/torch_nccl_shim.py ddp OUT.pt
        DDP training steps of a small model; rank 0 saves the final weights to OUT.pt and prints
        the median step time.
    torchrun --nproc_per_node=N tests/torch/torch_nccl_shim.py collectives
        torch.distributed's collectives on every type they take, SUM/AVG/MAX/PREMUL_SUM, a
        subgroup from new_group, batched isend/irecv, barrier; every value checked exactly.
    python3 tests/torch/torch_nccl_shim.py compare A.pt B.pt
        exit 0 when the two runs' weights agree within fp32 tolerance.

scripts/gpu-check.sh runs all three. Exit status 0 when every check holds.
"""
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist


def setup():
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    return dist.get_rank(), dist.get_world_size(), torch.device("cuda", local)


def ddp(out):
    rank, n, dev = setup()
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 16)).to(dev)
    ddp_model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[dev.index])
    opt = torch.optim.SGD(ddp_model.parameters(), lr=0.05)
    gen = torch.Generator(device=dev).manual_seed(1000 + rank)
    times = []
    for step in range(30):
        x = torch.randn(64, 256, device=dev, generator=gen)
        y = torch.randn(64, 16, device=dev, generator=gen)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp_model(x), y)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        if step >= 5:
            times.append(time.perf_counter() - t0)
    # Every rank holds the same weights after DDP's allreduces.
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(n)]
    dist.all_gather(gathered, flat)
    for r, g in enumerate(gathered):
        if not torch.equal(g, flat):
            raise SystemExit(f"rank {rank}: rank {r}'s weights differ after DDP steps")
    if rank == 0:
        torch.save({k: v.cpu() for k, v in model.state_dict().items()}, out)
        print(f"ddp: {n} ranks, median step {statistics.median(times) * 1e3:.3f} ms, "
              f"loss {loss.item():.6f}")
    dist.destroy_process_group()


def collectives():
    rank, n, dev = setup()
    bad = []

    def check(what, got, want):
        if not torch.equal(got.cpu(), want.cpu()):
            bad.append(f"{what}: got {got.flatten()[:4].tolist()}, want {want.flatten()[:4].tolist()}")

    floats = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
    ints = [torch.int32, torch.int64, torch.int8, torch.uint8]
    total = n * (n + 1) // 2  # sum of rank + 1 over the ranks
    for dt in floats + ints:
        t = torch.full((1027,), rank + 1, dtype=dt, device=dev)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        check(f"all_reduce sum {dt}", t, torch.full_like(t, total))
        t = torch.full((1027,), rank + 1, dtype=dt, device=dev)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        check(f"all_reduce max {dt}", t, torch.full_like(t, n))
        if dt in floats:
            t = torch.full((1027,), 2 * (rank + 1), dtype=dt, device=dev)
            dist.all_reduce(t, op=dist.ReduceOp.AVG)
            check(f"all_reduce avg {dt}", t, torch.full_like(t, n + 1))
            # A Python factor (ncclScalarHostImmediate) and a tensor one (ncclScalarDevice).
            # Not bfloat16: PyTorch 2.11 hands NCCL a 4-byte float for a 2-byte bfloat16 factor
            # (pytorch/pytorch#190745), which NCCL itself reads as 0 for powers of two.
            factors = [] if dt == torch.bfloat16 else [2.0, torch.tensor(2.0, dtype=dt, device=dev)]
            for factor in factors:
                t = torch.full((1027,), rank + 1, dtype=dt, device=dev)
                dist.all_reduce(t, op=dist._make_nccl_premul_sum(factor))
                kind = "tensor" if torch.is_tensor(factor) else "scalar"
                check(f"all_reduce premul_sum ({kind} factor) {dt}", t, torch.full_like(t, 2 * total))
        # broadcast, all_gather, reduce_scatter, all_to_all, reduce
        t = torch.full((515,), rank + 7, dtype=dt, device=dev)
        dist.broadcast(t, src=n - 1)
        check(f"broadcast {dt}", t, torch.full_like(t, n - 1 + 7))
        mine = torch.full((33,), rank + 1, dtype=dt, device=dev)
        out = torch.empty(33 * n, dtype=dt, device=dev)
        dist.all_gather_into_tensor(out, mine)
        want = torch.cat([torch.full((33,), r + 1, dtype=dt, device=dev) for r in range(n)])
        check(f"all_gather {dt}", out, want)
        src = torch.cat([torch.full((17,), (rank + 1) * (r + 1), dtype=dt, device=dev)
                         for r in range(n)])
        out = torch.empty(17, dtype=dt, device=dev)
        dist.reduce_scatter_tensor(out, src, op=dist.ReduceOp.SUM)
        check(f"reduce_scatter {dt}", out, torch.full_like(out, total * (rank + 1)))
        src = torch.cat([torch.full((9,), rank * 10 + r, dtype=dt, device=dev) for r in range(n)])
        out = torch.empty_like(src)
        dist.all_to_all_single(out, src)
        want = torch.cat([torch.full((9,), r * 10 + rank, dtype=dt, device=dev) for r in range(n)])
        check(f"all_to_all {dt}", out, want)
        t = torch.full((65,), rank + 1, dtype=dt, device=dev)
        dist.reduce(t, dst=0, op=dist.ReduceOp.SUM)
        if rank == 0:
            check(f"reduce {dt}", t, torch.full_like(t, total))
    # A subgroup from new_group: the even ranks (every rank calls new_group).
    evens = list(range(0, n, 2))
    g = dist.new_group(evens)
    if rank in evens:
        t = torch.full((100,), rank, dtype=torch.float32, device=dev)
        dist.all_reduce(t, group=g)
        check("all_reduce in new_group(evens)", t, torch.full_like(t, sum(evens)))
    # Batched isend/irecv around the ring.
    nxt, prv = (rank + 1) % n, (rank - 1) % n
    send = torch.full((4099,), rank, dtype=torch.float32, device=dev)
    recv = torch.empty_like(send)
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, send, nxt),
                                   dist.P2POp(dist.irecv, recv, prv)])
    for q in reqs:
        q.wait()
    check("batch_isend_irecv", recv, torch.full_like(recv, prv))
    dist.barrier()
    torch.cuda.synchronize()
    dist.destroy_process_group()
    if bad:
        for b in bad:
            print(f"rank {rank}: {b}", file=sys.stderr)
        raise SystemExit(1)
    print(f"rank {rank}: collectives OK ({n} ranks)")


def compare(a, b):
    wa, wb = torch.load(a), torch.load(b)
    worst = max((wa[k] - wb[k]).abs().max().item() for k in wa)
    ok = all(torch.allclose(wa[k], wb[k], rtol=1e-5, atol=1e-6) for k in wa)
    print(f"compare: largest weight difference {worst:.3e}: {'OK' if ok else 'DIFFERENT'}")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "ddp":
        ddp(sys.argv[2])
    elif mode == "collectives":
        collectives()
    elif mode == "compare":
        compare(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)
