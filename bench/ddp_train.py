#!/usr/bin/env python3
"""PyTorch DistributedDataParallel over Gloo on Ringside's job, for `ringside-bench train`.

The same job as `ringside compare` trains: an MLP with the given layer list and tanh hidden
layers, softmax cross-entropy, Adam, a global batch split evenly across N worker processes on
loopback, synthetic data. Each process uses one thread (as each Ringside worker computes on one
core's worth of BLAS). Every step is timed on rank 0 from the start of its forward pass to the end
of its optimiser step (DDP overlaps the allreduce with the backward pass, so compute and sync
are not separable here); samples/s is the global batch times the steps over the summed step
times, the definition `ringside compare` uses.

  ddp_train.py --workers=4 --model=784,1024,1024,10 --batch_size=64 --steps=50 --rows=2048

Prints one JSON object on stdout: {"samples_per_second", "step_seconds_p50", "steps",
"workers", "torch_version"}. Exits 2 with a one-line message when torch is not installed.
"""
import argparse
import json
import os
import socket
import sys
import time


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_model(torch, layers):
    modules = []
    for i in range(len(layers) - 1):
        modules.append(torch.nn.Linear(layers[i], layers[i + 1]))
        if i < len(layers) - 2:
            modules.append(torch.nn.Tanh())
    return torch.nn.Sequential(*modules)


def worker(rank, args, port, queue):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=args.workers)
    torch.manual_seed(args.seed)  # the same initial parameters on every rank
    layers = [int(x) for x in args.model.split(",")]
    model = torch.nn.parallel.DistributedDataParallel(build_model(torch, layers))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = torch.nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(args.seed + 1 + rank)
    features = torch.randn(args.rows, layers[0], generator=generator)
    labels = torch.randint(0, layers[-1], (args.rows,), generator=generator)
    local_batch = args.batch_size // args.workers
    seconds = []
    for step in range(args.steps):
        start = (step * local_batch) % max(1, args.rows - local_batch)
        x = features[start:start + local_batch]
        y = labels[start:start + local_batch]
        began = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()  # DDP's allreduce runs inside, bucket by bucket
        optimizer.step()
        seconds.append(time.perf_counter() - began)
    dist.barrier()
    if rank == 0:
        queue.put({"seconds": seconds, "loss": float(loss.item())})
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--model", default="784,1024,1024,10")
    parser.add_argument("--batch_size", type=int, default=64, help="global, split across workers")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rows", type=int, default=2048, help="synthetic rows per worker")
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.workers < 1 or args.batch_size % args.workers != 0 or args.steps < 1:
        sys.exit("ddp_train.py: need --workers >= 1, --steps >= 1 and --batch_size a multiple of "
                 "--workers")
    try:
        import torch
        import torch.multiprocessing as mp
    except ImportError as error:
        print(f"ddp_train.py: PyTorch is not installed ({error}); on Debian 12: "
              "apt-get install python3-torch", file=sys.stderr)
        sys.exit(2)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    context = mp.get_context("spawn")
    queue = context.SimpleQueue()
    mp.spawn(worker, args=(args, free_port(), queue), nprocs=args.workers, join=True)
    result = queue.get()
    seconds = sorted(result["seconds"])
    total = sum(result["seconds"])
    print(json.dumps({
        "samples_per_second": args.batch_size * len(seconds) / total if total > 0 else 0,
        "step_seconds_p50": seconds[len(seconds) // 2],
        "steps": len(seconds),
        "workers": args.workers,
        "final_loss": result["loss"],
        "torch_version": torch.__version__,
    }))


if __name__ == "__main__":
    main()
