"""TQC's truncated quantile critics (Kuznetsov et al., ICML 2020; `critic = "quantile"`).

N critics (`num_critics`), each M quantiles (`num_quantiles`) of the return's distribution
at (s, a), at the fractions tau_m = (m + 1/2) / M. The target pools the N M quantiles of
the target critics at (x', a'), sorts them and drops the k largest (`quantiles_dropped`,
TQC's d N): the overestimation is controlled by how much of the upper tail is cut, not by
a minimum over critics.

    (x', a', h) = side.next(s')                            (TD3: no h)
    z = sort(pool_n Z_targ_n(x', a'))[: N M - k]           [B, J], J = N M - k
    y_j = r + gamma * d * (z_j - h)
    L = mean_{n, B, m, j} |tau_m - 1{u < 0}| Huber(u),  u = y_j - Z_n(s, a)_m   (kappa 1)
    Q(s, a) read by the actor = mean over the critics' quantiles (pooled, as TQC)

TD3 reads its first critic's mean quantile, as it reads its first scalar critic.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jax_rl.algos import common
from jax_rl.algos.critics import base
from jax_rl.core.transition import Transition

KEEPS_TARGETS = True
TD_ERRORS = False
POOLED = True  # the actor reads the mean over all critics (not a minimum)


def num_critics_field() -> Any:
    return common.field(5, "critics of the quantile critic (TQC: 5)", static=True)


def num_quantiles_field() -> Any:
    return common.field(25, "quantiles per critic of the quantile critic (TQC: 25)", static=True)


def quantiles_dropped_field() -> Any:
    return common.field(
        10,
        "largest of the pooled target quantiles dropped by the quantile critic (TQC: 2 per "
        "critic, 10 of 5 x 25)",
        static=True,
    )


def check(config: Any, name: str) -> None:
    for key, low in (("num_critics", 1), ("num_quantiles", 1), ("quantiles_dropped", 0)):
        value = getattr(config, key)
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} {key} must be an integer >= {low}, got {value!r}")
    pooled = config.num_critics * config.num_quantiles
    if config.quantiles_dropped >= pooled:
        raise ValueError(
            f"{name} quantiles_dropped {config.quantiles_dropped} leaves no target quantile "
            f"of the {pooled} pooled ({config.num_critics} critics x {config.num_quantiles})"
        )


def fractions(num_quantiles: int) -> jax.Array:
    """tau_m = (m + 1/2) / M [M]."""
    return (jnp.arange(num_quantiles, dtype=jnp.float32) + 0.5) / num_quantiles


def value(out: jax.Array, config: Any) -> jax.Array:
    return out.mean(axis=-1)


def truncated(next_quantiles: jax.Array, dropped: int) -> jax.Array:
    """The pooled quantiles [B, N M - k] of next_quantiles [N, B, M], sorted, the k =
    `dropped` largest cut."""
    num, batch, size = next_quantiles.shape
    pooled = jnp.moveaxis(next_quantiles, 0, 1).reshape(batch, num * size)
    return jnp.sort(pooled, axis=-1)[:, : num * size - dropped]


def target(side: base.Side, state: Any, batch: Transition, key: jax.Array) -> jax.Array:
    """y [B, J]; batch is normalised."""
    cfg = state.config
    next_in, next_action, shift = side.next(state, batch.next_obs, key)
    next_out = base.network(cfg).apply(state.target_critic_params, next_in, next_action)
    z = truncated(next_out, cfg.quantiles_dropped)
    if shift is not None:
        z = z - shift[:, None]
    return batch.reward[:, None] + (cfg.discount * batch.discount)[:, None] * z


def quantile_huber(quantiles: jax.Array, target: jax.Array) -> jax.Array:
    """mean over critics, rows, quantiles and targets of |tau_m - 1{u < 0}| Huber(u), u =
    target_j - quantile_m; quantiles [N, B, M], target [B, J] (a constant)."""
    u = target[None, :, None, :] - quantiles[..., None]  # [N, B, M, J]
    size = jnp.abs(u)
    huber = jnp.where(size <= 1.0, 0.5 * u**2, size - 0.5)
    tau = fractions(quantiles.shape[-1])[None, None, :, None]
    return (jnp.abs(tau - (u < 0).astype(jnp.float32)) * huber).mean()


def loss(
    critic_params: Any, side: base.Side, state: Any, batch: Transition, target: jax.Array
) -> tuple[jax.Array, None]:
    return quantile_huber(base.online(critic_params, state, batch), target), None  # [N, B, M]


def train(
    side: base.Side, state: Any, batch: Transition, key: jax.Array
) -> tuple[jax.Array, Any, None, dict[str, Any]]:
    y = target(side, state, batch, key)
    value_loss, _, grads = base.fit(loss, side, state, batch, y)
    return value_loss, grads, None, {}
