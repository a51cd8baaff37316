"""Target networks' schedules, one part TD3 and SAC name: Polyak averaging (the published
learners, rate `tau`), hard copies every `target_every` updates (TD7), or none (a critic
recipe without target networks: crossq, `critics.keeps_targets`).

A learner's targets are its state's `target_<net>_params` fields for the nets it names
("actor", "critic"). After every target update TD3's value clip takes the range of the TD
targets seen so far (`critics.scalar.after_target_update`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jax_rl.algos import common
from jax_rl.algos.critics import scalar
from jax_rl.networks import polyak_update


def every_field() -> Any:
    """The `target_every` Config field (TD3): hard copies in place of Polyak averaging."""
    return common.field(
        0,
        "> 0: hard target copies every this many updates (TD7: 250), no Polyak",
        static=True,
    )


def check_every(config: Any, name: str) -> None:
    """target_every an integer >= 0 (0: Polyak averaging)."""
    every = config.target_every
    if not isinstance(every, int) or isinstance(every, bool) or every < 0:
        raise ValueError(f"{name} target_every must be an integer >= 0, got {every!r}")


def _updated(state: Any, targets: dict[str, Any]) -> Any:
    state = state.replace(**targets)
    if getattr(state, "value_range", None) is None:
        return state
    return state.replace(value_range=scalar.after_target_update(state.value_range))


def polyak(state: Any, nets: Sequence[str]) -> Any:
    """targets <- tau * online + (1 - tau) * targets, for each of `nets`."""
    tau = state.config.tau
    return _updated(state, {
        f"target_{net}_params": polyak_update(
            getattr(state, f"target_{net}_params"), getattr(state, f"{net}_params"), tau
        )
        for net in nets
    })  # fmt: skip


def copy(state: Any, nets: Sequence[str]) -> Any:
    """targets <- copies of the online nets (TD7's hard updates)."""
    return _updated(
        state,
        {f"target_{net}_params": common.copy(getattr(state, f"{net}_params")) for net in nets},
    )
