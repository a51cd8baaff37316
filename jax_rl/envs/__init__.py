"""Environment adapters. Each hands the loops float32 observations and takes actions in [-1, 1]."""

from __future__ import annotations

import dataclasses
from typing import Protocol

import numpy as np


class UnknownEnvironmentError(ValueError):
    """An environment name that does not exist; the message lists the valid ones."""


@dataclasses.dataclass(frozen=True)
class HostStep:
    """What a host environment returns for one step.

    `discount` is 0 only at a true terminal state; `last` is True at any
    episode end, terminal or time limit. `next_obs` is always the observation
    the step produced, never one after a reset.
    """

    next_obs: np.ndarray
    reward: float
    discount: float
    last: bool


class HostEnv(Protocol):
    """An environment stepped by Python on the host (see `jax_rl.loops.host`)."""

    obs_size: int
    action_size: int

    def reset(self) -> np.ndarray: ...

    def step(self, action: np.ndarray) -> HostStep: ...
