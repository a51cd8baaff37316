"""Timing that accounts for JAX's asynchronous dispatch.

A jitted call returns as soon as its work is queued, so a plain timer around
it measures Python, not computation. Every timed block here ends with
`jax.block_until_ready` on the full output, compilation (first call to first
result) is timed apart, and steady state is reached by warm-up steps that are
not timed. Figures are reported as median and mean +- std over blocks.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp


@dataclasses.dataclass(frozen=True)
class Timing:
    """Seconds for the first call and for each timed block of `steps_per_block` steps."""

    first_call_seconds: float
    block_seconds: tuple[float, ...]
    steps_per_block: int

    def per_1000(self) -> tuple[float, float, float]:
        """(median, mean, std) of seconds per 1000 steps over the blocks."""
        scaled = [s * 1000.0 / self.steps_per_block for s in self.block_seconds]
        std = statistics.stdev(scaled) if len(scaled) > 1 else 0.0
        return statistics.median(scaled), statistics.fmean(scaled), std

    def per_second(self) -> float:
        """Median steps per second."""
        return self.steps_per_block / statistics.median(self.block_seconds)


def time_steps(
    step: Callable[[], Any],
    steps_per_block: int,
    num_blocks: int,
    warmup_steps: int,
) -> Timing:
    """Time `step()`, which does one step and returns what to block on.

    The first call (compilation included) is timed alone; then `warmup_steps`
    untimed steps; then `num_blocks` blocks of `steps_per_block` steps, each
    closed by `block_until_ready` on the last step's output.
    """
    if steps_per_block <= 0 or num_blocks <= 0 or warmup_steps < 0:
        raise ValueError("steps_per_block and num_blocks must be positive, warmup_steps >= 0")
    start = time.perf_counter()
    jax.block_until_ready(step())
    first_call = time.perf_counter() - start
    out = None
    for _ in range(warmup_steps):
        out = step()
    jax.block_until_ready(out)
    blocks = []
    for _ in range(num_blocks):
        start = time.perf_counter()
        for _ in range(steps_per_block):
            out = step()
        jax.block_until_ready(out)
        blocks.append(time.perf_counter() - start)
    return Timing(first_call, tuple(blocks), steps_per_block)


def compiled_flops(fn: Callable[..., Any], *args: Any) -> float | None:
    """FLOPs of one call of jitted `fn` on `args`, from XLA's cost analysis.

    Counts every operation of the program once; both branches of a `lax.cond` are
    counted, so for TD3's delayed actor update this is an upper bound. The lowered
    program's analysis, where the backend gives one: the learners' updates count within
    2% of their compiled programs' (tests/test_timing.py) without compiling them a second
    time beside the timed run's; else the compiled program's. None if the backend offers
    no cost analysis.
    """
    lowered = fn.lower(*args) if hasattr(fn, "lower") else jax.jit(fn).lower(*args)
    flops = _flops(lowered.cost_analysis())
    return flops if flops is not None else _flops(lowered.compile().cost_analysis())


def _flops(cost: Any) -> float | None:
    if isinstance(cost, (list, tuple)):
        cost = cost[0] if cost else None
    if not cost or "flops" not in cost:
        return None
    return float(cost["flops"])


def matmul_rate(size: int = 2048, repeats: int = 10) -> float:
    """The machine's float32 matmul rate in FLOP/s on the default device (median), at JAX's
    default precision (the one the learners run at; TF32 on recent NVIDIA GPUs). Random
    operands: some hardware multiplies constant data faster than real data."""
    a = jax.random.normal(jax.random.key(0), (size, size), jnp.float32)
    matmul = jax.jit(lambda x, y: x @ y)
    jax.block_until_ready(matmul(a, a))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(matmul(a, a))
        times.append(time.perf_counter() - start)
    return 2.0 * size**3 / statistics.median(times)
