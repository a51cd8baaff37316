"""The floor under MR.Q's update on this CPU: how fast its matmuls can run at their shapes.

    python docs/benchmarks/mrq/matmul_floor.py            # about a minute on 2 cores

MR.Q's update (`--preset mrq`, batch 256, widths 512) is mostly matmuls: a profile of one
update (jax.profiler) puts about three quarters of its op time in XLA's matmul kernels and
fusions. Its rate against the large-matmul peak (docs/benchmarks/mrq/host.md: 39%) is then
bounded by the rate its own shapes reach: a forward matmul [256, k] x [k, n], and the
weight gradients x^T g that contract over the batch of 256 (or over 1,280 rows, a
matmul that takes the 5 steps of a window at once). This script times each shape alone, jitted,
beside a 2048^3 matmul, and prints the GFLOP/s of each: where MR.Q's matmuls already run
near the rates of their shapes, a faster update needs fewer FLOPs, not fusion.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp

# (label, m, k, n, transposed): transposed shapes are weight gradients, x[k, m]^T @ g[k, n].
SHAPES = (
    ("peak: 2048 x 2048 x 2048", 2048, 2048, 2048, False),
    ("forward, batch 256: 256 x 512 x 512", 256, 512, 512, False),
    ("forward, 5 steps unrolled: 1280 x 512 x 512", 1280, 512, 512, False),
    ("forward into the 65 reward bins: 256 x 512 x 65", 256, 512, 65, False),
    ("weight gradient over the batch: 512 x 256 x 512", 512, 256, 512, True),
    ("weight gradient over 5 steps: 512 x 1280 x 512", 512, 1280, 512, True),
    ("input layer's weight gradient: 23 x 256 x 512", 23, 256, 512, True),
)


def gflops(m: int, k: int, n: int, transposed: bool, seconds: float = 1.0) -> float:
    """GFLOP/s of one jitted matmul of these sizes, repeated for about `seconds`."""
    a = jnp.ones((k, m) if transposed else (m, k))
    b = jnp.ones((k, n))
    f = jax.jit((lambda a, b: a.T @ b) if transposed else (lambda a, b: a @ b))
    f(a, b).block_until_ready()
    start, reps = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        out = f(a, b)
        reps += 1
    out.block_until_ready()
    return 2 * m * k * n * reps / (time.perf_counter() - start) / 1e9


def main() -> int:
    print(f"{jax.devices()[0].device_kind}, jax {jax.__version__}")
    peak = None
    for label, m, k, n, transposed in SHAPES:
        rate = gflops(m, k, n, transposed)
        peak = peak or rate
        print(f"{label:<52} {rate:7.0f} GFLOP/s  {100 * rate / peak:4.0f}% of the peak")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
