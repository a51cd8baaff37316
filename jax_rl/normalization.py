"""Running observation statistics, held in a learner's state (`--normalize_obs`).

Shapes: B observations in a batch, O observation size.

Every learner with `normalize_obs` keeps `ObsStats` in its `State`: the count,
mean and sum of squared deviations (M2) of every observation the loop has
collected. A loop calls the learner's `observe(state, obs [B, O])` once per
collection step; `merge` folds the batch in with the parallel form of
Welford's algorithm (Chan et al., 1979), which is exact whatever the batch
sizes:

    n = n_a + n_b,   delta = mean_b - mean_a
    mean = mean_a + delta * n_b / n
    M2 = M2_a + M2_b + delta^2 * n_a * n_b / n

The learner normalises with the statistics it holds, in `act` and in `update`
alike: (obs - mean) / sqrt(var + 1e-8), clipped to [-10, 10] so that a feature
that has barely varied yet cannot blow up. Evaluation only acts, so the
statistics are frozen there. Being part of the state, they are checkpointed,
resumed and vmapped over a population (one set per agent) with no extra code.

The count is float32: exact up to 2^24 observations added one at a time (the
host loop) and far beyond when they come in batches of a power of two (the
device pipeline's environments).
"""

from __future__ import annotations

import flax.struct
import jax
import jax.numpy as jnp

EPSILON = 1e-8
CLIP = 10.0


class ObsStats(flax.struct.PyTreeNode):
    count: jax.Array  # [] float32, observations merged so far
    mean: jax.Array  # [O]
    m2: jax.Array  # [O] sum of squared deviations from the mean


def init_stats(obs_size: int) -> ObsStats:
    """No observation seen: the count is 0 (the first merge takes the batch's moments)."""
    zeros = jnp.zeros(obs_size, jnp.float32)
    return ObsStats(count=jnp.float32(0.0), mean=zeros, m2=jnp.copy(zeros))


def merge(stats: ObsStats, obs: jax.Array) -> ObsStats:
    """The statistics with the batch obs [B, O] folded in (parallel Welford)."""
    obs = obs.reshape(-1, stats.mean.shape[-1]).astype(jnp.float32)
    n_b = jnp.float32(obs.shape[0])
    mean_b = obs.mean(axis=0)
    m2_b = ((obs - mean_b) ** 2).sum(axis=0)
    n = stats.count + n_b
    delta = mean_b - stats.mean
    return ObsStats(
        count=n,
        mean=stats.mean + delta * (n_b / n),
        m2=stats.m2 + m2_b + delta**2 * (stats.count * n_b / n),
    )


def variance(stats: ObsStats) -> jax.Array:
    """[O] population variance of the observations merged so far (1 before any)."""
    return jnp.where(stats.count > 0, stats.m2 / jnp.maximum(stats.count, 1.0), 1.0)


def normalize(stats: ObsStats | None, obs: jax.Array) -> jax.Array:
    """obs [..., O] standardised with `stats`; unchanged where there are none (off)."""
    if stats is None:
        return obs
    scaled = (obs - stats.mean) * jax.lax.rsqrt(variance(stats) + EPSILON)
    return jnp.clip(scaled, -CLIP, CLIP)
