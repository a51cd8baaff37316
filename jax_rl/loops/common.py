"""What both loops share: checks of their configs and the on-device metric sums."""

from __future__ import annotations

from types import ModuleType
from typing import Any, Protocol, TypeVar

import jax
import jax.numpy as jnp

from jax_rl.transition import Transition

MAX_DEFAULT_REPLAY = 1_000_000


def check_positive_ints(config: Any, names: tuple[str, ...]) -> None:
    for name in names:
        value = getattr(config, name)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def replay_capacity(max_timesteps: int, replay_size: int | None) -> int:
    """The replay capacity asked for, or by default min(max_timesteps, 1M)."""
    if replay_size is not None:
        return replay_size
    return min(max_timesteps, MAX_DEFAULT_REPLAY)


def check_collection(config: Any) -> None:
    """Checks of max_timesteps, start_timesteps, batch_size and replay_size together."""
    if config.replay_size is not None and (
        not isinstance(config.replay_size, int) or config.replay_size <= 0
    ):
        raise ValueError(f"replay_size must be a positive integer, got {config.replay_size!r}")
    if config.start_timesteps < config.batch_size:
        raise ValueError(
            f"start_timesteps ({config.start_timesteps}) must be at least batch_size "
            f"({config.batch_size}): the first update samples a full batch"
        )
    if config.start_timesteps > config.max_timesteps:
        raise ValueError(
            f"start_timesteps ({config.start_timesteps}) exceeds max_timesteps "
            f"({config.max_timesteps}): the run would never learn"
        )
    if config.capacity < config.batch_size:
        raise ValueError(
            f"replay_size ({config.capacity}) must be at least batch_size ({config.batch_size})"
        )


def zero_metrics(algo: ModuleType, agent: Any, batch: Transition, key: jax.Array) -> dict:
    """Zeros shaped like the metrics `algo.update` returns (nothing is computed)."""
    _, shapes = jax.eval_shape(algo.update, agent, batch, key)
    return {k: jnp.zeros(v.shape, v.dtype) for k, v in shapes.items()}


class HasMetricSums(Protocol):
    metric_sums: dict[str, jax.Array]
    num_updates: jax.Array

    def replace(self, **changes: Any) -> Any: ...


CarryT = TypeVar("CarryT", bound=HasMetricSums)


def pull_metrics(carry: CarryT) -> tuple[CarryT, dict[str, float]]:
    """Averages of the metrics summed since the last call, and the carry with sums reset.

    The one device-to-host read of a logging point.
    """
    sums, count = jax.device_get((carry.metric_sums, carry.num_updates))
    means = {k: float(v) / max(int(count), 1) for k, v in sums.items()}
    zeroed = jax.tree_util.tree_map(jnp.zeros_like, carry.metric_sums)
    return carry.replace(metric_sums=zeroed, num_updates=jnp.zeros_like(carry.num_updates)), means
