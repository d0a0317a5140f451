#!/usr/bin/env python3
"""PyTorch eager beside ortc's GEMM benchmark, for run.sh (copied into
OUT_DIR as torch_gemm.py; run there only when `import torch` works and a GPU
is visible). The same work as the gemm_bench models: C = A B B B B with
M = N = K = SIZE (default 4096), timed the way ortc-run times a run (host
wall clock around one whole chain, synchronized), median and p90 by nearest
rank over ITERS runs after WARMUP. Prints one line per precision:

  torch: LABEL: median X ms, p90 Y ms, Z TFLOP/s

Usage: torch_gemm.py [SIZE [CHAIN [ITERS [WARMUP]]]]
"""
import math
import sys
import time

import torch


def percentile(sorted_ms, p):
    rank = math.ceil(p / 100.0 * len(sorted_ms))
    return sorted_ms[min(len(sorted_ms), max(rank, 1)) - 1]


def bench(label, dtype, tf32, size, chain, iters, warmup):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    # f16 products accumulate in f32, as the CUDA EP's do.
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    a = torch.rand(size, size, device="cuda", dtype=torch.float32).mul_(2).sub_(1).to(dtype)
    b = (torch.rand(size, size, device="cuda", dtype=torch.float32).mul_(2).sub_(1)
         * math.sqrt(6.0 / size)).to(dtype)

    def step():
        c = a
        for _ in range(chain):
            c = c @ b
        return c

    with torch.no_grad():
        for _ in range(warmup):
            step()
        torch.cuda.synchronize()
        times = []
        for _ in range(iters):
            start = time.perf_counter()
            step()
            torch.cuda.synchronize()
            times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    median = percentile(times, 50)
    flops = 2.0 * size ** 3 * chain
    print(f"torch: {label}: median {median:.4g} ms, p90 {percentile(times, 90):.4g} ms, "
          f"{flops / (median * 1e-3) / 1e12:.4g} TFLOP/s", flush=True)


def main():
    given = [int(a) for a in sys.argv[1:5]]
    size, chain, iters, warmup = given + [4096, 4, 20, 3][len(given):]
    if not torch.cuda.is_available():
        print("torch: no CUDA device visible", flush=True)
        return 1
    print(f"torch: {torch.__version__} on {torch.cuda.get_device_name(0)}", flush=True)
    for label, dtype, tf32 in ((f"gemm {size}^3 x{chain} f32 (allow_tf32 False)", torch.float32, False),
                               (f"gemm {size}^3 x{chain} f32 (allow_tf32 True)", torch.float32, True),
                               (f"gemm {size}^3 x{chain} f16", torch.float16, False)):
        try:
            bench(label, dtype, tf32, size, chain, iters, warmup)
        except Exception as error:  # one line, and go on
            print(f"torch: {label}: failed: {str(error).splitlines()[0][:150]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
