"""The categorical (C51) critic recipe of TD3 and SAC (`critic = "categorical"`).

Shapes: B batch, E critics in the ensemble, K atoms.

A categorical critic outputs, for each (s, a), logits over K fixed atoms
z_k = v_min + k * (v_max - v_min) / (K - 1) (Bellemare et al., 2017); its Q value
is the mean of that distribution, sum_k p_k z_k. Training is the distributional
Bellman update:

    target atoms   z'_k = r + gamma * d * (z_k - alpha * log pi(a'|s'))   (SAC; TD3: no alpha term)
    projected      m_i  = sum_k p'_k * max(0, 1 - |b_k - i|),  b_k = (clip(z'_k) - v_min) / dz
    loss           -sum_i m_i log softmax(logits(s, a))_i, mean over B, summed over E

where p' is the target critics' distribution at (s', a') and d the transition's
discount mask (0 at a true terminal, so every atom collapses onto r; at a
time-limit truncation 1). With n-step transitions r is the n-step return and
d = gamma^(n-1) * mask, as for the scalar critic (`jax_rl.loops.nstep`). The
projection splits each target atom between its two neighbours on the support in
proportion to closeness; atoms outside [v_min, v_max] land on the end atoms.

Clipped double Q takes, per sample, the whole target distribution of the critic
whose mean is lowest (as FastTD3 does), not an atom-wise minimum.

The projection is written densely (a [B, K, K] weight per batch): exact, free of
scatters, and fused by XLA into one reduction.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jax_rl.algos.critics import base
from jax_rl.core.transition import Transition

KEEPS_TARGETS = True
TD_ERRORS = False


def support(v_min: jax.Array, v_max: jax.Array, num_atoms: int) -> jax.Array:
    """The K atoms z [K], evenly spaced from v_min to v_max."""
    return jnp.linspace(v_min, v_max, num_atoms, dtype=jnp.float32)


def mean_value(logits: jax.Array, atoms: jax.Array) -> jax.Array:
    """Q [...] = sum_k softmax(logits)_k z_k; logits [..., K]."""
    return (jax.nn.softmax(logits.astype(jnp.float32), axis=-1) * atoms).sum(axis=-1)


def project(target_atoms: jax.Array, probs: jax.Array, atoms: jax.Array) -> jax.Array:
    """The distribution with probabilities probs [B, K] at target_atoms [B, K], projected
    onto the support atoms [K]: -> [B, K], each row summing to sum_k probs[b, k]."""
    v_min, v_max, num_atoms = atoms[0], atoms[-1], atoms.shape[0]
    spacing = (v_max - v_min) / (num_atoms - 1)
    position = (jnp.clip(target_atoms, v_min, v_max) - v_min) / spacing  # b_k in [0, K-1]
    index = jnp.arange(num_atoms, dtype=jnp.float32)
    weight = jnp.maximum(0.0, 1.0 - jnp.abs(position[:, :, None] - index))  # [B, K_src, K]
    return (probs[:, :, None] * weight).sum(axis=1)


def lowest_mean(logits: jax.Array, atoms: jax.Array) -> jax.Array:
    """Per sample, the probabilities [B, K] of the critic whose mean is lowest;
    logits [E, B, K] (clipped double Q for distributions)."""
    probs = jax.nn.softmax(logits.astype(jnp.float32), axis=-1)
    means = (probs * atoms).sum(axis=-1)  # [E, B]
    chosen = jnp.argmin(means, axis=0)  # [B]
    return jnp.take_along_axis(probs, chosen[None, :, None], axis=0)[0]


def target_distribution(
    next_logits: jax.Array,
    atoms: jax.Array,
    reward: jax.Array,
    discount: jax.Array,
    shift: jax.Array | float = 0.0,
) -> jax.Array:
    """The projected target m [B, K] from the target critics' logits [E, B, K] at
    (s', a'): atoms moved to reward [B] + discount [B] * (z - shift [B]); `discount` is
    gamma times the transition's mask, `shift` SAC's alpha * log pi(a'|s')."""
    probs = lowest_mean(next_logits, atoms)
    shift = jnp.broadcast_to(jnp.asarray(shift, jnp.float32), reward.shape)
    moved = reward[:, None] + discount[:, None] * (atoms[None, :] - shift[:, None])
    return project(moved, probs, atoms)


def cross_entropy(logits: jax.Array, target: jax.Array) -> jax.Array:
    """sum over critics of mean_B -sum_k m_k log softmax(logits)_k; logits [E, B, K],
    target m [B, K] (a constant)."""
    log_probs = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    return -(target[None] * log_probs).sum(axis=-1).mean(axis=1).sum()


# --- The recipe (`jax_rl.algos.critics`) ---------------------------------------------


def check(config: Any, name: str) -> None:
    """The atoms are checked for every critic (`common.check_recipe`); nothing more here."""


def atoms(config: Any) -> jax.Array:
    return support(config.v_min, config.v_max, config.num_atoms)


def value(out: jax.Array, config: Any) -> jax.Array:
    return mean_value(out, atoms(config))


def target(side: base.Side, state: Any, batch: Transition, key: jax.Array) -> jax.Array:
    """The projected target distribution m [B, K]; batch is normalised."""
    cfg = state.config
    next_in, next_action, shift = side.next(state, batch.next_obs, key)
    next_out = base.network(cfg).apply(state.target_critic_params, next_in, next_action)
    discount = cfg.discount * batch.discount
    shift = 0.0 if shift is None else shift
    return target_distribution(next_out, atoms(cfg), batch.reward, discount, shift=shift)


def loss(
    critic_params: Any, side: base.Side, state: Any, batch: Transition, target: jax.Array
) -> tuple[jax.Array, None]:
    """The critics' cross-entropies to the target distribution m [B, K] (a constant)."""
    return cross_entropy(base.online(critic_params, state, batch), target), None  # [E, B, K]


def train(
    side: base.Side, state: Any, batch: Transition, key: jax.Array
) -> tuple[jax.Array, Any, None, dict[str, Any]]:
    m = target(side, state, batch, key)
    value_loss, _, grads = base.fit(loss, side, state, batch, m)
    return value_loss, grads, None, {}
