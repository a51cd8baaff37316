"""n-step returns for the host loop: one-step transitions in, n-step transitions out.

A transition stored for time t holds

    reward   = r_t + g r_{t+1} + ... + g^(m-1) r_{t+m-1}
    discount = g^(m-1) * d_{t+m-1}
    next_obs = s_{t+m}

where g is the agent's discount, d the terminal mask of `Transition` (0 at a
true terminal, 1 otherwise, a time-limit truncation included) and m = n, or
fewer when the episode ends (terminal or truncation) before t + n. Every
learner forms its TD target as reward + discount_config * discount * V(next_obs),
so with this layout it bootstraps with g^m from s_{t+m}, or not at all after a
terminal, and needs no change. n = 1 gives the one-step transitions back.

The targets are uncorrected n-step returns of the behaviour policy (as in
D4PG, Acme's and Tonic's MPO): a bias that shrinks as the policy moves slowly.

`NStepQueue` keeps the last n - 1 steps of every agent and releases the
transition of time t at time t + n - 1, so the loop still inserts exactly one
transition per agent per step, n - 1 steps late (the last n - 1 steps of a
run are never stored). The device pipeline does the same inside its compiled
chunk, with the pending steps in its carry (`jax_rl.loops.device`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from jax_rl.core.transition import Transition


def n_step_transition(
    steps: Sequence[Transition], lasts: Sequence[Any], gammas: Any, xp: Any = np
) -> Transition:
    """The n-step transition of the first of `steps` (n = len(steps)), for E agents or
    environments at once.

    steps[i] is the one-step transition of time t + i ([E, ...] leaves) and
    lasts[i] [E] says whether an episode ended with it (terminal or truncation);
    gammas are the discounts ([E] or a scalar). `xp` is the array module: NumPy
    on the host loop, jax.numpy inside the device pipeline.
    """
    first = steps[0]
    reward = xp.zeros_like(first.reward)
    discount = first.discount
    next_obs = first.next_obs
    scale = xp.ones_like(reward)  # g^i
    open_ = xp.ones(reward.shape, dtype=bool)  # the episode of time t goes on through step i
    for step, last in zip(steps, lasts, strict=True):
        reward = xp.where(open_, reward + scale * step.reward, reward)
        discount = xp.where(open_, scale * step.discount, discount)
        next_obs = xp.where(open_[:, None], step.next_obs, next_obs)
        open_ = open_ & ~last
        scale = scale * gammas
    return Transition(
        obs=first.obs,
        action=first.action,
        reward=reward.astype(xp.float32),
        discount=discount.astype(xp.float32),
        next_obs=next_obs.astype(xp.float32),
    )


class NStepQueue:
    """Delays P agents' one-step transitions by n - 1 steps and returns them as n-step ones."""

    def __init__(self, n: int, gammas: Sequence[float], obs_size: int, action_size: int) -> None:
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"n_step must be a positive integer, got {n!r}")
        self.n = n
        self.gammas = np.asarray(gammas, np.float32)
        p = len(self.gammas)
        self._empty = Transition(
            obs=np.zeros((p, obs_size), np.float32),
            action=np.zeros((p, action_size), np.float32),
            reward=np.zeros(p, np.float32),
            discount=np.zeros(p, np.float32),
            next_obs=np.zeros((p, obs_size), np.float32),
        )
        self._steps: list[Transition] = []
        self._lasts: list[np.ndarray] = []

    def push(self, step: Transition, last: np.ndarray) -> Transition | None:
        """Add time t's transitions ([P] agents); return time t - n + 1's n-step
        transitions, or None while fewer than n steps have been pushed."""
        if self.n == 1:
            return step
        self._steps.append(step)
        self._lasts.append(np.asarray(last, bool))
        if len(self._steps) < self.n:
            return None
        out = n_step_transition(self._steps, self._lasts, self.gammas)
        del self._steps[0], self._lasts[0]
        return out

    # Checkpoints: the pending steps as fixed-shape arrays (n - 1 slots, the first
    # `count` filled), so that a fresh queue gives the template to restore into.
    def state(self) -> tuple[dict[str, Any], int]:
        """(arrays, count): the pending steps, [n - 1, P, ...], and how many are real."""
        padding = self.n - 1 - len(self._steps)
        pending = [*self._steps, *[self._empty] * padding]
        lasts = [*self._lasts, *[np.zeros(len(self.gammas), bool)] * padding]
        stacked = jax.tree_util.tree_map(lambda *xs: np.stack(xs).astype(np.float32), *pending)
        return {"steps": stacked, "lasts": np.stack(lasts).astype(np.float32)}, len(self._steps)

    def restore(self, arrays: dict[str, Any], count: int) -> None:
        steps, lasts = arrays["steps"], np.asarray(arrays["lasts"])
        self._steps = [
            jax.tree_util.tree_map(lambda x, i=i: np.asarray(x[i], np.float32), steps)
            for i in range(count)
        ]
        self._lasts = [lasts[i] > 0.5 for i in range(count)]
