"""Observations as the learners see them: one float32 vector, with an optional split
between what the actor sees and what only the critics see (asymmetric actor-critic).

MuJoCo Playground's locomotion and manipulation tasks observe a dict with
`state` (what a robot's own sensors give: the policy's input) and
`privileged_state` (simulator quantities a real robot lacks: contact forces,
true velocities, ...). With `asymmetric` on, the vector is [state | privileged
state] and the learner's `actor_obs_size` is the size of `state`: the actor sees
the first part, the critics the second (`jax_rl.algos.common.views`). Without
it, such a task is observed through `state` alone, for the actor and the critics.
Any other dict is concatenated in key order; an array is flattened.

    --asymmetric_obs auto   split where the task has both keys (the default)
    --asymmetric_obs on     the same, but a task without them is an error
    --asymmetric_obs off    never split
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp

STATE, PRIVILEGED = "state", "privileged_state"
MODES = ("auto", "on", "off")


class NoPrivilegedStateError(ValueError):
    """--asymmetric_obs on for a task whose observation has no privileged state."""


def has_privileged_state(obs: Any) -> bool:
    return isinstance(obs, Mapping) and STATE in obs and PRIVILEGED in obs


@dataclasses.dataclass(frozen=True)
class Layout:
    """How one task's observation (an array or a dict of arrays) becomes a vector."""

    asymmetric: bool  # [state | privileged state], the actor seeing the first part
    state_only: bool  # a privileged-state task observed through `state` alone
    size: int  # O, the vector's length
    actor_size: int  # features the actor sees (0: all)

    @classmethod
    def of(cls, shapes: Any, mode: str = "auto", task: str = "this task") -> Layout:
        """The layout for an observation with these shapes (`jax.eval_shape` of one)."""
        if mode not in MODES:
            raise ValueError(f"asymmetric_obs must be one of {', '.join(MODES)}, got {mode!r}")

        def count(tree: Any) -> int:
            return sum(math.prod(x.shape) for x in jax.tree_util.tree_leaves(tree))

        if not has_privileged_state(shapes):
            if mode == "on":
                keys = ", ".join(sorted(shapes)) if isinstance(shapes, Mapping) else "an array"
                raise NoPrivilegedStateError(
                    f"--asymmetric_obs on: {task} observes {keys}, not a dict with "
                    f"'{STATE}' and '{PRIVILEGED}'; use --asymmetric_obs auto or off"
                )
            return cls(False, False, count(shapes), 0)
        state = count(shapes[STATE])
        if mode == "off":
            return cls(False, True, state, 0)
        return cls(True, False, state + count(shapes[PRIVILEGED]), state)

    def flatten(self, obs: Any) -> jax.Array:
        """[O] float32."""
        if self.asymmetric:
            parts = [obs[STATE], obs[PRIVILEGED]]
        elif self.state_only:
            parts = [obs[STATE]]
        elif isinstance(obs, Mapping):
            parts = [obs[k] for k in sorted(obs)]
        else:
            parts = [obs]
        return jnp.concatenate([jnp.ravel(p) for p in parts]).astype(jnp.float32)
