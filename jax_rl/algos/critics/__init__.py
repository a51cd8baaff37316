"""Critic recipes: how TD3's and SAC's critics are built, trained and read.

One value picks the recipe, the learner's `critic` field (`crossq = True` is an alias of
`critic = "crossq"`). Each recipe is one module of this package, and the learners only
name it; a recipe module has

    KEEPS_TARGETS  whether the learner keeps target critics (and TD3 a target actor)
    TD_ERRORS      whether its loss is a TD error per row (what LAP's priorities need)
    check(config, name)              its own settings (ValueError naming the first bad one)
    value(out, config) -> Q [..., B] a Q value from the critic's output [..., B(, K)]
    train(side, state, batch, key) -> (loss, grads, priority or None, state changes)

The pieces every recipe and learner shares (the field, `Side`, the critics' network and
their outputs per (s, a)) live in `base`. `train` returns the gradient of the critics'
loss with respect to `state.critic_params` (the learner takes the optimiser step), the
rows' new LAP priorities where the learner uses LAP, and a dict of state fields the
recipe itself keeps (running statistics, the value clip's range). What a learner lends
the recipe is its `Side`: how it reaches (s', a') for the target (TD3 smooths its target
actor's action, SAC samples its policy and subtracts the entropy term) and the scale of
its squared error.

Shapes: B batch, E critics, A action size, K outputs per (s, a).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import jax

from jax_rl.algos import common
from jax_rl.algos.critics import categorical, crossq, quantile, scalar
from jax_rl.algos.critics.base import Side, critic_field, name, network

__all__ = ["Side", "critic_field", "name", "network", "recipe", "check", "keeps_targets",
           "actor_value", "update", "RECIPES"]  # fmt: skip

MODULES: dict[str, ModuleType] = {
    "scalar": scalar, "categorical": categorical, "crossq": crossq, "quantile": quantile,
}  # fmt: skip
RECIPES = tuple(MODULES)


def recipe(config: Any) -> ModuleType:
    """The recipe module that `config` names."""
    return MODULES[name(config)]


def check(config: Any) -> None:
    """Raise ValueError for an unknown recipe or a setting the recipe refuses."""
    learner = type(config).__module__.rsplit(".", 1)[-1].upper()
    if config.critic not in RECIPES:
        raise ValueError(f"critic must be one of {', '.join(RECIPES)}, got {config.critic!r}")
    if getattr(config, "crossq", False) and config.critic not in ("scalar", "crossq"):
        raise ValueError(f"{learner} crossq takes the scalar critic, got critic {config.critic!r}")
    if getattr(config, "clip_values", False) and name(config) != "scalar":
        raise ValueError(f"{learner} clip_values takes the scalar critic with target networks "
                         "(not categorical, crossq or quantile)")  # fmt: skip
    if getattr(config, "replay", "uniform") == "lap" and not recipe(config).TD_ERRORS:
        raise ValueError(f"{learner} replay lap takes the scalar critic (or crossq), got "
                         f"critic {config.critic!r}")  # fmt: skip
    recipe(config).check(config, learner)


def keeps_targets(config: Any) -> bool:
    return bool(recipe(config).KEEPS_TARGETS)


def actor_value(out: jax.Array, config: Any) -> jax.Array:
    """The Q [B] an actor reading the whole ensemble's output [E, B(, K)] maximises (SAC):
    the minimum over critics, or for a pooled recipe (quantile) their mean."""
    module = recipe(config)
    q = module.value(out, config)
    return q.mean(axis=0) if getattr(module, "POOLED", False) else q.min(axis=0)


def update(side: Side, state: Any, batch: Any, key: jax.Array) -> tuple[Any, jax.Array, Any]:
    """One critic step of the recipe `state.config` names, Adam (AdamW with weight_decay)
    at critic_lr: (state, loss, the rows' new priorities with LAP or None)."""
    cfg = state.config
    loss, grads, priority, changes = recipe(cfg).train(side, state, batch, key)
    state = state.replace(**changes)
    params, opt_state = common.network_step(
        state.critic_params, grads, state.critic_opt_state, cfg.critic_lr, cfg
    )
    return state.replace(critic_params=params, critic_opt_state=opt_state), loss, priority
