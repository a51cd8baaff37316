"""Small pieces that more than one learner needs: config checks and Adam.

Learning rates are traced values held in the learner's state (so that a
population of learners with different rates can be vmapped), hence Adam is
split into optax's `scale_by_adam` and a multiplication by that traced rate.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Iterable
from typing import Any, TypeVar

import flax.struct
import jax
import jax.numpy as jnp
import optax
from jax.typing import ArrayLike

_ADAM = optax.scale_by_adam()

ConfigT = TypeVar("ConfigT")


def field(default: Any, doc: str, static: bool = False) -> Any:
    """A config field with its one-line doc (shown by the CLIs' --help).

    Static fields (shapes, counts) are part of the compiled program; the others
    are traced values, so changing them never recompiles.
    """
    return flax.struct.field(pytree_node=not static, default=default, metadata={"doc": doc})


def describe(config_class: type) -> list[tuple[str, Any, str, bool]]:
    """(name, default, doc, static) for each field of a config class."""
    return [
        (f.name, f.default, f.metadata.get("doc", ""), not f.metadata.get("pytree_node", True))
        for f in dataclasses.fields(config_class)
    ]


def is_concrete_number(value: Any) -> bool:
    # A config is rebuilt with tracers (and other placeholders) whenever JAX
    # unflattens it; only values a user wrote down are checked.
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_fields(
    config: Any,
    positive: Iterable[str] = (),
    non_negative: Iterable[str] = (),
    unit_interval: Iterable[str] = (),
    positive_ints: Iterable[str] = (),
) -> None:
    """Raise ValueError naming the first field whose value is out of range."""
    name = type(config).__module__.rsplit(".", 1)[-1].upper()
    for field in positive:
        value = getattr(config, field)
        if is_concrete_number(value) and not value > 0:
            raise ValueError(f"{name} {field} must be > 0, got {value}")
    for field in non_negative:
        value = getattr(config, field)
        if is_concrete_number(value) and not value >= 0:
            raise ValueError(f"{name} {field} must be >= 0, got {value}")
    for field in unit_interval:
        value = getattr(config, field)
        if is_concrete_number(value) and not 0 <= value <= 1:
            raise ValueError(f"{name} {field} must be in [0, 1], got {value}")
    for field in positive_ints:
        value = getattr(config, field)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name} {field} must be a positive integer, got {value!r}")


def check_hidden_sizes(config: Any) -> None:
    sizes = config.hidden_sizes
    if not sizes or not all(isinstance(s, int) and s > 0 for s in sizes):
        raise ValueError(f"hidden_sizes must be positive integers, got {sizes!r}")


def check_init(config: Any) -> None:
    from jax_rl.networks import INITS

    if config.layer_init not in INITS:
        raise ValueError(f"layer_init must be one of {', '.join(INITS)}, got {config.layer_init!r}")


def as_traced(config: ConfigT) -> ConfigT:
    """The config with every traced (pytree) field as a float32 array.

    Done once in `init`, so that the state's leaves keep one dtype and weak
    type across updates and the update compiles once.
    """
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x, jnp.float32), config)


def copy(tree: Any) -> Any:
    """A copy of every array in `tree`.

    Target parameters start equal to the online ones but must not share
    their buffers: the loops donate the whole state, and XLA refuses to
    donate one buffer twice.
    """
    return jax.tree_util.tree_map(jnp.copy, tree)


def adam_init(params: Any) -> optax.OptState:
    return _ADAM.init(params)


def adam_step(
    params: Any, grads: Any, opt_state: optax.OptState, learning_rate: ArrayLike
) -> tuple[Any, optax.OptState]:
    """One Adam step (betas 0.9, 0.999; eps 1e-8) with a traced learning rate."""
    updates, opt_state = _ADAM.update(grads, opt_state, params)
    params = jax.tree_util.tree_map(lambda p, u: p - learning_rate * u, params, updates)
    return params, opt_state
