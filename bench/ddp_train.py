#!/usr/bin/env python3
"""PyTorch DistributedDataParallel over Gloo on Ringside's job, for `ringside-bench train`.

The same job as `ringside compare` trains: an MLP with the given layer list and tanh hidden
layers, Glorot-uniform initial weights (limit sqrt(6 / (fan_in + fan_out))) and zero biases as
Ringside initialises them, softmax cross-entropy, Adam at --lr, a global batch split evenly
across N worker processes on loopback. Data: synthetic rows, or Fashion-MNIST read from its IDX
files (--fashion_mnist=DIR) with pixels scaled to [0, 1] as Ringside reads them; each step's
global batch is a slice of a seeded permutation of the training set, split across the ranks.
Each process uses one thread (as each Ringside worker computes on one core's worth of BLAS).

Every step is timed on rank 0 from the start of its forward pass to the end of its optimiser
step (DDP overlaps the allreduce with the backward pass, so compute and sync are not separable
here); samples/s is the global batch times the steps over the summed step times, the definition
`ringside compare` uses. On Fashion-MNIST rank 0 evaluates the parameters on the 10,000 test
images every --eval_every steps and after the last; the evaluation runs between steps and its
time is taken off rank 0's clock, so `seconds` (since the first step began) and the time to
--target_accuracy count training only, as Ringside's evaluator thread keeps its time out of the
step.

  ddp_train.py --workers=4 --model=784,1024,1024,10 --batch_size=64 --steps=300 --lr=0.001 \\
      --fashion_mnist=/usr/share/datasets/fashion-mnist

Prints one JSON object on stdout: {"samples_per_second", "step_seconds_p50", "steps", "workers",
"final_loss", "torch_version"} and on Fashion-MNIST also "test_accuracy" (the final
parameters'), "test_accuracy_recent_mean" (the last 5 evaluations), "seconds_to_target" and
"steps_to_target" (null when not reached), "accuracy_over_time" [{"step", "seconds",
"test_accuracy", "loss"}]. Exits 2 with a one-line message when torch is not installed.
"""
import argparse
import gzip
import json
import os
import socket
import struct
import sys
import time

RECENT_EVALUATIONS = 5


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_model(torch, layers):
    modules = []
    for i in range(len(layers) - 1):
        linear = torch.nn.Linear(layers[i], layers[i + 1])
        torch.nn.init.xavier_uniform_(linear.weight)  # Ringside's tanh initialisation
        torch.nn.init.zeros_(linear.bias)
        modules.append(linear)
        if i < len(layers) - 2:
            modules.append(torch.nn.Tanh())
    return torch.nn.Sequential(*modules)


def read_idx(directory, name, magic, dimensions):
    """The IDX file DIR/NAME(.gz) as (dims, bytes), checked like Ringside's reader."""
    path = os.path.join(directory, name + ".gz")
    opener = gzip.open
    if not os.path.exists(path):
        path, opener = os.path.join(directory, name), open
    with opener(path, "rb") as f:
        data = f.read()
    header = 4 * (1 + dimensions)
    if len(data) < header or struct.unpack(">I", data[:4])[0] != magic:
        sys.exit(f"ddp_train.py: {path}: not an IDX file with magic 0x{magic:08x}")
    dims = struct.unpack(">" + "I" * dimensions, data[4:header])
    size = 1
    for d in dims:
        size *= d
    if len(data) != header + size:
        sys.exit(f"ddp_train.py: {path}: wrong size for its header {dims}")
    return dims, data[header:]


def fashion_mnist(torch, directory, split):
    dims, pixels = read_idx(directory, f"{split}-images-idx3-ubyte", 0x803, 3)
    _, labels = read_idx(directory, f"{split}-labels-idx1-ubyte", 0x801, 1)
    x = torch.frombuffer(bytearray(pixels), dtype=torch.uint8).reshape(dims[0], -1)
    return x.float() / 255.0, torch.frombuffer(bytearray(labels), dtype=torch.uint8).long()


def load_data(torch, args, layers):
    if args.fashion_mnist:
        train = fashion_mnist(torch, args.fashion_mnist, "train")
        return train, fashion_mnist(torch, args.fashion_mnist, "t10k")
    generator = torch.Generator().manual_seed(args.seed + 1)
    features = torch.randn(args.rows, layers[0], generator=generator)
    labels = torch.randint(0, layers[-1], (args.rows,), generator=generator)
    return (features, labels), None


def evaluate(torch, model, test):
    model.eval()
    correct = 0
    with torch.no_grad():
        for begin in range(0, len(test[1]), 1000):
            logits = model(test[0][begin:begin + 1000])
            correct += int((logits.argmax(dim=1) == test[1][begin:begin + 1000]).sum())
    model.train()
    return correct / len(test[1])


def batch_rows(torch, rows, batch_size, step, seed, cache):
    """Rows of `step`'s global batch: positions of an endless sequence of seeded epochs."""
    rows_out = []
    position = step * batch_size
    while len(rows_out) < batch_size:
        epoch, offset = divmod(position, rows)
        if epoch not in cache:
            cache.clear()
            cache[epoch] = torch.randperm(rows, generator=torch.Generator().manual_seed(
                seed * 1000003 + epoch))
        take = min(batch_size - len(rows_out), rows - offset)
        rows_out.append(cache[epoch][offset:offset + take])
        position += take
    return torch.cat(rows_out)


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
    (features, labels), test = load_data(torch, args, layers)
    local = args.batch_size // args.workers
    seconds, points, cache = [], [], {}
    evaluating = test is not None and rank == 0
    eval_time, first_start = 0.0, None

    def record(step, loss):
        # Seconds of training since the first step began: earlier evaluations' time taken off.
        nonlocal eval_time
        began = time.perf_counter()
        elapsed = 0.0 if first_start is None else began - first_start - eval_time
        accuracy = evaluate(torch, model.module, test)
        if first_start is not None:  # the step-0 evaluation comes before the clock starts
            eval_time += time.perf_counter() - began
        points.append({"step": step, "seconds": elapsed, "test_accuracy": accuracy,
                       "loss": loss})

    if evaluating:
        record(0, 0.0)
    for step in range(args.steps):
        rows = batch_rows(torch, len(labels), args.batch_size, step, args.seed, cache)
        mine = rows[rank * local:(rank + 1) * local]
        x, y = features[mine], labels[mine]
        began = time.perf_counter()
        if first_start is None:
            first_start = began
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()  # DDP's allreduce runs inside, bucket by bucket
        optimizer.step()
        seconds.append(time.perf_counter() - began)
        done = step + 1
        if evaluating and (done % args.eval_every == 0 or done == args.steps):
            record(done, float(loss.item()))
    dist.barrier()
    if rank == 0:
        queue.put({"seconds": seconds, "loss": float(loss.item()), "points": points})
    dist.destroy_process_group()


def accuracy_summary(points, target):
    if not points:
        return {}
    recent = points[-RECENT_EVALUATIONS:]
    reached = next((p for p in points if p["test_accuracy"] >= target), None)
    return {
        "test_accuracy": points[-1]["test_accuracy"],
        "test_accuracy_recent_mean": sum(p["test_accuracy"] for p in recent) / len(recent),
        "seconds_to_target": reached["seconds"] if reached else None,
        "steps_to_target": reached["step"] if reached else None,
        "accuracy_over_time": points,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--model", default="784,1024,1024,10")
    parser.add_argument("--batch_size", type=int, default=64, help="global, split across workers")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rows", type=int, default=2048, help="synthetic rows")
    parser.add_argument("--fashion_mnist", default="",
                        help="directory of Fashion-MNIST's IDX files (instead of synthetic rows)")
    parser.add_argument("--eval_every", type=int, default=25)
    parser.add_argument("--target_accuracy", type=float, default=0.75)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.workers < 1 or args.batch_size % args.workers != 0 or args.steps < 1 or \
            args.eval_every < 1:
        sys.exit("ddp_train.py: need --workers >= 1, --steps >= 1, --eval_every >= 1 and "
                 "--batch_size a multiple of --workers")
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
    out = {
        "samples_per_second": args.batch_size * len(seconds) / total if total > 0 else 0,
        "step_seconds_p50": seconds[len(seconds) // 2],
        "steps": len(seconds),
        "workers": args.workers,
        "final_loss": result["loss"],
        "torch_version": torch.__version__,
    }
    out.update(accuracy_summary(result["points"], args.target_accuracy))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
