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


# --- Reward scaling (`--scale_rewards`, SimbaV2's) -------------------------------------
#
# The critic's targets are made O(1) by dividing every sampled reward by
#
#     scale = max(sqrt(Var[G] + 1e-8), max |G| / RETURN_BOUND)
#
# where G is the discounted return the loop has collected so far in each environment:
# G_t = r_t + gamma * d_{t-1} * G_{t-1}, d the discount mask of the step before. Var[G]
# is the variance of every G seen (Welford, as the observations), max |G| the largest
# seen. The second term bounds the scaled returns by RETURN_BOUND, the edge of SimbaV2's
# categorical support [-5, 5]. G restarts only at a true terminal (discount 0): the
# critics bootstrap through time limits, so the return they estimate runs on past a
# truncation too. Rewards are stored raw; the scale is the learner's current one
# wherever a batch is sampled.

RETURN_BOUND = 5.0


class RewardStats(flax.struct.PyTreeNode):
    carry: jax.Array  # [E] gamma * d_t * G_t of the latest step: where each G goes on from
    moments: ObsStats  # count, mean and M2 of every return seen (size 1)
    peak: jax.Array  # [] the largest |return| seen


def init_reward_stats(num_envs: int) -> RewardStats:
    """No reward seen: returns 0 in each of the num_envs environments, scale 1."""
    return RewardStats(
        carry=jnp.zeros(num_envs, jnp.float32),
        moments=init_stats(1),
        peak=jnp.float32(0.0),
    )


def merge_rewards(
    stats: RewardStats, reward: jax.Array, discount: jax.Array, gamma: jax.Array
) -> RewardStats:
    """The statistics after one step of every environment: reward, discount [E]."""
    returns = stats.carry + reward
    return RewardStats(
        carry=gamma * discount * returns,
        moments=merge(stats.moments, returns[:, None]),
        peak=jnp.maximum(stats.peak, jnp.abs(returns).max()),
    )


def reward_scale(stats: RewardStats | None) -> jax.Array:
    """[] the number sampled rewards are divided by (1 without scaling or data)."""
    if stats is None:
        return jnp.float32(1.0)
    spread = jnp.sqrt(variance(stats.moments)[0] + EPSILON)
    return jnp.maximum(spread, stats.peak / RETURN_BOUND)
