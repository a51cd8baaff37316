"""CrossQ (Bhatt et al., ICLR 2024; `critic = "crossq"`, alias `crossq = True`): BatchRenorm
networks and no target networks; (s, a) and (s', a') run through the critics in one
training-mode pass, so both halves are normalised by the same batch statistics, and the
target is that pass's second half without gradient:

    (x', a', h) = side.next(s')                         (the online networks)
    [Q(x, a) | Q(x', a')] = Q([x | x'], [a | a'])
    y = r + gamma * d * (min_i sg(Q_i(x', a')) - h)
    L = scale * sum_i mean_B (Q_i(x, a) - y)^2            (LAP: Huber)

x is the critics' input at (s, a): s itself, or with SALE (`jax_rl.algos.sale`) the
embeddings of the fixed encoders phi (TD7's choice for Q(s, a)); x' is the same at
(s', a'), and a' the online actor's, reading the same fixed encoders:

    x  = [s,  z_sa(phi; z_s(phi; s), a),    z_s(phi; s)]
    a' = pi([s', z_s(phi; s')])   (TD3: plus its smoothing noise; SAC: a sample)
    x' = [s', z_sa(phi; z_s(phi; s'), a'), z_s(phi; s')]

TD7 reads its fixed *target* encoders at s', for its target critic; CrossQ has none, and
one encoder copy for both halves keeps them one function of the input that BatchRenorm
normalises over the joint batch. The learner's `side.next` reads the target copy, so the
recipe lends it the state with the fixed encoders in that copy's place (`one_encoder`);
the encoders' own update is SALE's, unchanged.

The actor's loss reads the critics with their running statistics (the learner's side).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp

from jax_rl.algos import common, sale
from jax_rl.algos.critics import base
from jax_rl.core.transition import Transition

KEEPS_TARGETS = False
TD_ERRORS = True


def check(config: Any, name: str) -> None:
    """BatchRenorm's settings in range, no other network family than batchrenorm (which it
    reads mlp as), and no target setting (a `tau` or `target_every` other than
    its default would do nothing: a sweep of it would train the same agent under several
    names)."""
    for role in ("actor", "critic"):
        if common.network_family(config, role) != "batchrenorm":
            given = getattr(config, f"{role}_network")
            raise ValueError(f"{name} crossq trains batchrenorm networks: leave {role}_network "
                             f"at mlp or batchrenorm, got {given}")  # fmt: skip
    momentum = config.renorm_momentum
    if common.is_concrete_number(momentum) and not 0 < momentum < 1:
        raise ValueError(f"{name} renorm_momentum must be in (0, 1), got {momentum}")
    warmup = config.renorm_warmup
    if not isinstance(warmup, int) or isinstance(warmup, bool) or warmup < 0:
        raise ValueError(f"{name} renorm_warmup must be an integer >= 0, got {warmup!r}")
    for key in ("tau", "target_every"):
        if not hasattr(config, key):
            continue
        value, default = getattr(config, key), type(config).__dataclass_fields__[key].default
        if common.is_concrete_number(value) and value != default:
            raise ValueError(
                f"{name} {key} does nothing with crossq (no target networks): leave it at "
                f"{default}, got {value}"
            )


def value(out: jax.Array, config: Any) -> jax.Array:
    return out


def one_encoder(state: Any) -> Any:
    """`state` with SALE's fixed encoders also in the fixed target's place, so that the
    learner's side reads (s', a') through the copy the critics read (s, a) with; unchanged
    without a representation."""
    if state.encoders is None:
        return state
    return state.replace(encoders=state.encoders.replace(fixed_target=state.encoders.fixed))


def loss(
    critic_params: Any, side: base.Side, state: Any, batch: Transition, key: jax.Array
) -> tuple[jax.Array, tuple[Any, jax.Array | None]]:
    """The loss and (the critics' running statistics after the pass, the rows' new
    priorities with LAP or None). batch is normalised."""
    cfg = state.config
    next_in, next_action, shift = side.next(one_encoder(state), batch.next_obs, key)
    fixed, _ = sale.copies(state.encoders)
    critic_in = sale.critic_view(fixed, cfg, batch.obs, batch.action)
    joint_obs = jnp.concatenate([critic_in, next_in])  # [2B, X]
    joint_action = jnp.concatenate([batch.action, next_action])  # [2B, A]
    out, critic_stats = common.apply_train(
        base.network(cfg, train=True), critic_params, state.critic_stats, joint_obs,
        joint_action,
    )  # fmt: skip
    q, next_q = jnp.split(out, 2, axis=1)  # [E, B] each
    next_value = jax.lax.stop_gradient(next_q).min(axis=0)
    if shift is not None:
        next_value = next_value - shift
    y = batch.reward + cfg.discount * batch.discount * next_value
    value_loss, priority = common.td_loss(q, y, cfg, scale=side.scale)
    return value_loss, (critic_stats, priority)


def train(
    side: base.Side, state: Any, batch: Transition, key: jax.Array
) -> tuple[jax.Array, Any, jax.Array | None, dict[str, Any]]:
    grad = jax.value_and_grad(
        functools.partial(loss, side=side, state=state, batch=batch, key=key), has_aux=True
    )
    (value_loss, (critic_stats, priority)), grads = grad(state.critic_params)
    return value_loss, grads, priority, {"critic_stats": critic_stats}
