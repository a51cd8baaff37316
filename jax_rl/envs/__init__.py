"""Environment adapters. Each hands the loops float32 observations and takes actions in [-1, 1]."""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

import numpy as np


class UnknownEnvironmentError(ValueError):
    """An environment name that does not exist; the message lists the valid ones."""


class UnsupportedEnvironmentError(UnknownEnvironmentError):
    """An environment the learners cannot drive (discrete actions, unbounded actions,
    images, dict observations, ...); the message is one line naming what they need."""


class EnvironmentSettingError(ValueError):
    """A setting the environment cannot take (an action repeat longer than its episode,
    say); the message is one line."""


@dataclasses.dataclass(frozen=True)
class HostStep:
    """What a host environment returns for one step.

    `discount` is 0 only at a true terminal state; `last` is True at any
    episode end, terminal or time limit. `next_obs` is always the observation
    the step produced, never one after a reset. `frames` is how many frames of
    the simulator the step advanced (more than 1 under an action repeat,
    `jax_rl.envs.repeat`); the loops count frames.
    """

    next_obs: np.ndarray
    reward: float
    discount: float
    last: bool
    frames: int = 1


class HostEnv(Protocol):
    """An environment stepped by Python on the host (see `jax_rl.loops.host`).

    An adapter may also say how long its episodes are, `episode_frames` (its time limit
    in frames; None or inf for none), which an action repeat is checked against."""

    obs_size: int
    action_size: int

    def reset(self) -> np.ndarray: ...

    def step(self, action: np.ndarray) -> HostStep: ...

    def get_state(self) -> dict[str, Any]:
        """Everything needed to continue exactly from here, as JSON-compatible values."""
        ...

    def set_state(self, state: dict[str, Any]) -> None:
        """Continue from a state `get_state` returned (possibly in another process)."""
        ...
