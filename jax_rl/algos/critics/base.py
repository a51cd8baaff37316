"""What every critic recipe and the learners share: the `critic` field, the learner's
`Side`, the recipe's name and the critics' network (`jax_rl.algos.critics`)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax

from jax_rl.algos import common, sale
from jax_rl.networks import Critic, EnsembleCritic


def critic_field() -> Any:
    """The `critic` field: which recipe trains the critics."""
    return common.field(
        "scalar",
        "critic recipe: scalar (published), categorical (C51 distribution), crossq (CrossQ: "
        "BatchRenorm, no targets; also --crossq) or quantile (TQC's truncated quantiles)",
        static=True,
    )


class Side(NamedTuple):
    """What a learner lends its critic recipe.

    next: (state, next_obs [B, O] normalised, key) -> (the critics' input at s' [B, .],
        a' [B, A], the entropy term subtracted from the target's values [B] or None); it
        reads the target networks where the state keeps them.
    scale: the squared TD error's factor (TD3 1, SAC 0.5).
    """

    next: Callable[[Any, jax.Array, jax.Array], tuple[jax.Array, jax.Array, Any]]
    scale: float


def name(config: Any) -> str:
    """The recipe's name: `critic`, or crossq where the `crossq` alias is on."""
    return "crossq" if getattr(config, "crossq", False) else config.critic


def network(config: Any, train: bool = False, ensemble: bool = True) -> Any:
    """The critics as the recipe builds them: an `EnsembleCritic` (-> [E, B(, K)]), or with
    ensemble False one member (`Critic`, -> [B(, K)]); `train`: batchrenorm networks
    (crossq's) in training mode."""
    sizes = common.critic_sizes(config)
    kwargs = dict(
        layer_init=config.layer_init,
        num_atoms=outputs(config),
        matmul_dtype=config.matmul_dtype,
        network=common.network_family(config, "critic"),
        blocks=config.critic_blocks,
        renorm=common.renorm(config, train),
    )
    if not ensemble:
        return Critic(sizes, **kwargs)
    return EnsembleCritic(sizes, num_members=members(config), **kwargs)


def members(config: Any) -> int:
    """The critics in the ensemble: 2 (clipped double Q), or the quantile recipe's count."""
    return int(config.num_critics) if name(config) == "quantile" else 2


def outputs(config: Any) -> int:
    """The critic's outputs per (s, a): 0 for one scalar Q, K atoms, M quantiles."""
    recipe = name(config)
    if recipe == "categorical":
        return int(config.num_atoms)
    return int(config.num_quantiles) if recipe == "quantile" else 0


def online(critic_params: Any, state: Any, batch: Any) -> jax.Array:
    """The critics' output at (s, a) [E, B(, K)] (normalised; SALE: the fixed encoders)."""
    cfg = state.config
    critic_in = sale.critic_view(sale.copies(state.encoders)[0], cfg, batch.obs, batch.action)
    return network(cfg).apply(critic_params, critic_in, batch.action)


def fit(
    loss: Callable[..., Any], side: Side, state: Any, batch: Any, target: jax.Array
) -> tuple[jax.Array, Any, Any]:
    """(value, aux, gradient with respect to state.critic_params) of a recipe's
    loss(critic_params, side, state, batch, target) -> (value, aux); target a constant."""
    grad = jax.value_and_grad(
        functools.partial(loss, side=side, state=state, batch=batch, target=target), has_aux=True
    )
    (value, aux), grads = grad(state.critic_params)
    return value, aux, grads
