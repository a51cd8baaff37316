"""Data shared by every part of the suite: the one `Transition` layout."""

from __future__ import annotations

import flax.struct
import jax
import numpy as np

# Host loops fill transitions with NumPy arrays; jitted code sees jax.Arrays.
Array = jax.Array | np.ndarray


class Transition(flax.struct.PyTreeNode):
    """One environment step, or a batch of them along leading axes.

    All fields are float32. Shapes for a batch of B transitions:
    obs [B, obs_size], action [B, action_size], reward [B], discount [B],
    next_obs [B, obs_size].

    `discount` is a mask, not gamma: 0 only when `next_obs` is a true terminal
    state, 1 otherwise, including at a time-limit truncation, where `next_obs`
    is the true final observation (never the observation after a reset).
    `action` is in the agent's normalised range [-1, 1].
    """

    obs: Array
    action: Array
    reward: Array
    discount: Array
    next_obs: Array
