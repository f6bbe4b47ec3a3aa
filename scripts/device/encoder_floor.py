"""What the libraries give for a large-v3-turbo encoder window, sustained (GPU machine).

The fast-path issue's batch-32 target (4 ms a window) was set from one encoder layer's
cuBLAS products and PyTorch's flash attention timed alone and multiplied by 32. This
script runs the whole 32-layer encoder the same way -- fp16, PyTorch's own products
(cuBLAS/cuBLASLt), fused-epilogue-free GELU, F.scaled_dot_product_attention under each
backend it offers -- recorded as one CUDA graph and replayed back to back for a few seconds,
so the board reaches the power level a server's sustained load holds it at. It prints ms
per window at batch 1 and 32, per attention backend, and the SM clock and power it saw.
Random weights (the time does not depend on the values).

    python3 scripts/device/encoder_floor.py [--seconds 3] [--json OUT]
"""
import argparse
import json
import subprocess
import threading
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

D, HEADS, FRAMES, LAYERS, MLP = 1280, 20, 1500, 32, 5120


def make_layers(device):
    g = torch.Generator(device="cpu").manual_seed(1)

    def w(*shape, scale=0.02):
        return (torch.randn(*shape, generator=g) * scale).to(device=device, dtype=torch.float16)

    layers = []
    for _ in range(LAYERS):
        layers.append(dict(ln1=(w(D, scale=1.0), w(D)), qkv=(w(3 * D, D), w(3 * D)), out=(w(D, D), w(D)),
                           ln2=(w(D, scale=1.0), w(D)), up=(w(MLP, D), w(MLP)), down=(w(D, MLP), w(D))))
    return layers


def encoder(x, layers, batch):
    for p in layers:
        h = F.layer_norm(x, (D,), *p["ln1"])
        qkv = F.linear(h, *p["qkv"]).view(batch, FRAMES, 3, HEADS, D // HEADS).permute(2, 0, 3, 1, 4)
        o = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2])
        x = x + F.linear(o.transpose(1, 2).reshape(batch, FRAMES, D), *p["out"])
        h = F.layer_norm(x, (D,), *p["ln2"])
        x = x + F.linear(F.gelu(F.linear(h, *p["up"])), *p["down"])
    return x


class Smi:
    """nvidia-smi every 100 ms while a measurement runs: SM clock and power."""

    def __init__(self):
        self.rows, self.proc = [], None

    def __enter__(self):
        self.proc = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
                                      "-lms", "100"], stdout=subprocess.PIPE, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        return self

    def _read(self):
        for line in self.proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            try:
                self.rows.append((float(parts[0]), float(parts[1])))
            except (ValueError, IndexError):
                pass

    def __exit__(self, *exc):
        self.proc.terminate()

    def summary(self):
        busy = sorted(r for r in self.rows if r[1] > 250)
        if not busy:
            return {"samples": len(self.rows)}
        clocks = sorted(c for c, _ in busy)
        return {"samples": len(busy), "sm_clock_median_mhz": clocks[len(clocks) // 2], "sm_clock_min_mhz": clocks[0],
                "power_max_w": max(p for _, p in busy)}


def measure(layers, batch, backend, seconds):
    x = torch.randn(batch, FRAMES, D, device="cuda", dtype=torch.float16)
    with sdpa_kernel([backend]):
        for _ in range(2):  # warm-up, and the backend must accept the shape
            encoder(x, layers, batch)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            encoder(x, layers, batch)
        torch.cuda.current_stream().wait_stream(stream)
        with torch.cuda.graph(graph):
            y = encoder(x, layers, batch)
    torch.cuda.synchronize()
    # Blocks of replays, each timed with events, for `seconds` in all; the median block.
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    graph.replay()
    torch.cuda.synchronize()
    t0 = time.time()
    graph.replay()
    torch.cuda.synchronize()
    per_replay = max(time.time() - t0, 1e-4)
    reps = max(1, int(0.25 / per_replay))
    blocks = []
    with Smi() as smi:
        deadline = time.time() + seconds
        while time.time() < deadline or len(blocks) < 5:
            start.record()
            for _ in range(reps):
                graph.replay()
            end.record()
            end.synchronize()
            blocks.append(start.elapsed_time(end) / reps / batch)
    del y
    blocks.sort()
    return {"batch": batch, "attention": backend.name, "ms_per_window_median": blocks[len(blocks) // 2],
            "ms_per_window_min": blocks[0], "blocks": len(blocks), "replays_per_block": reps, **smi.summary()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    layers = make_layers("cuda")
    results = []
    for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION):
        for batch in (32, 1):
            try:
                r = measure(layers, batch, backend, args.seconds if batch == 32 else args.seconds / 3)
            except RuntimeError as e:  # a backend that does not take this shape or GPU
                r = {"batch": batch, "attention": backend.name, "error": str(e).splitlines()[0][:200]}
            results.append(r)
            print(json.dumps(r), flush=True)
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(), "results": results}, f,
                      indent=1)


if __name__ == "__main__":
    main()
