"""The scalar critic (`critic = "scalar"`, the published TD3 and SAC): E critics, each one
Q value per (s, a), trained against target critics by clipped double Q.

    (x', a', h) = side.next(s')      a' and the entropy term h (SAC; TD3: none)
    y = r + gamma * d * (min_i Q_targ_i(x', a') - h)
    L = scale * sum_i mean_B (Q_i(s, a) - y)^2    (LAP: Huber, `common.td_loss`)

Value clipping (TD7's `clip_values`, TD3): min_i Q_targ_i(x', a') is clipped to [the
lowest, the highest] TD target seen up to the latest target update (both 0 before the
first); the learner's state keeps that range (`value_range`) and its target schedule
calls `after_target_update`.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jax_rl.algos import common
from jax_rl.algos.critics import base
from jax_rl.core.transition import Transition

KEEPS_TARGETS = True
TD_ERRORS = True


def clip_values_field() -> Any:
    """The `clip_values` Config field (TD3): value clipping, as above."""
    return common.field(
        False,
        "clip target values to the range of TD targets seen (TD7)",
        static=True,
    )


def check(config: Any, name: str) -> None:
    """Nothing of its own (value clipping is checked for every recipe, `critics.check`)."""


def value(out: jax.Array, config: Any) -> jax.Array:
    return out


def target(side: base.Side, state: Any, batch: Transition, key: jax.Array) -> jax.Array:
    """y [B]; batch is normalised."""
    cfg = state.config
    next_in, next_action, shift = side.next(state, batch.next_obs, key)
    next_value = base.network(cfg).apply(state.target_critic_params, next_in, next_action)
    next_value = next_value.min(axis=0)
    value_range = getattr(state, "value_range", None)
    if value_range is not None:
        next_value = jnp.clip(next_value, value_range[0], value_range[1])
    discount = cfg.discount * batch.discount
    if shift is None:
        return batch.reward + discount * next_value
    return batch.reward + discount * (next_value - shift)


def loss(
    critic_params: Any, side: base.Side, state: Any, batch: Transition, target: jax.Array
) -> tuple[jax.Array, jax.Array | None]:
    """scale * sum_i mean_B (Q_i(s, a) - y)^2 (LAP: Huber) and the rows' new priorities
    with LAP (else None); target y [B] is a constant."""
    out = base.online(critic_params, state, batch)  # [E, B]
    return common.td_loss(out, target, state.config, scale=side.scale)


def train(
    side: base.Side, state: Any, batch: Transition, key: jax.Array
) -> tuple[jax.Array, Any, jax.Array | None, dict[str, Any]]:
    y = target(side, state, batch, key)
    value_loss, priority, grads = base.fit(loss, side, state, batch, y)
    changes = {}
    value_range = getattr(state, "value_range", None)
    if value_range is not None:
        changes["value_range"] = value_range.at[2].min(y.min()).at[3].max(y.max())
    return value_loss, grads, priority, changes


def init_value_range() -> jax.Array:
    """[clip low, clip high, lowest target seen, highest target seen]: the clip is [0, 0]
    until the first target update, as published; nothing seen is +-float32 max (finite:
    the loops' divergence watch reads every leaf of the state)."""
    big = float(jnp.finfo(jnp.float32).max)
    return jnp.array([0.0, 0.0, big, -big], jnp.float32)


def after_target_update(value_range: jax.Array | None) -> jax.Array | None:
    """The value clip after a target update: the range of the TD targets seen so far."""
    if value_range is None:
        return None
    return value_range.at[:2].set(value_range[2:])
