"""Action repeat: a host environment that holds each decision for K frames.

The field's DM Control protocol (DrQ, MR.Q, SimbaV2, TD-MPC2) repeats every action for
2 frames: 100k frames are 50k decisions, 50k stored transitions and 50k updates. One
step of `ActionRepeat(env, K)` steps `env` up to K times with the same action:

    reward   = sum of the frames' rewards (undiscounted within the repeat)
    discount = the last frame's: 0 if it ended at a true terminal, else 1
    next_obs = the observation of the last frame stepped
    frames   = K, the decision's length

An episode end inside the repeat stops it there: at a terminal the step reports discount
0; at a time limit discount 1 and that frame's observation, the true final one, so the
learner bootstraps through the truncation (DESIGN.md pitfall 2). The loops count the
frames each step reports (`HostStep.frames`), so every step a user reads is a frame. A
decision counts its K frames also where an episode end cut it short, as the field counts
frames (decisions x K): every agent of a population then keeps the same clock whatever
its episodes do, and trains as a run of its own. With dm_control's 1000-frame episodes and
K = 2 no repeat is ever cut short; a Gymnasium terminal inside a repeat counts up to K - 1
frames that were not stepped.

A decision is atomic: between two steps the wrapper holds no state of its own, so
`get_state` / `set_state` are the wrapped environment's and a run resumes exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jax_rl.envs import EnvironmentSettingError, HostEnv, HostStep


def check_action_repeat(action_repeat: Any, episode_frames: float | None, name: str) -> None:
    """Raise EnvironmentSettingError (one line) unless `action_repeat` is a whole number of
    frames from 1 to the episode's length (`episode_frames`; None or inf: no limit)."""
    whole = isinstance(action_repeat, int | np.integer) and not isinstance(action_repeat, bool)
    if not whole or action_repeat < 1:
        raise EnvironmentSettingError(
            f"action_repeat must be a positive integer, got {action_repeat!r}"
        )
    if episode_frames is not None and np.isfinite(episode_frames):
        if action_repeat > episode_frames:
            raise EnvironmentSettingError(
                f"action_repeat {action_repeat} is longer than an episode of {name} "
                f"({int(episode_frames)} frames)"
            )


class ActionRepeat:
    """`env` with each action held for `action_repeat` frames (see the module docstring).
    Everything else (names, rendering, `obs_size`, ...) is the wrapped environment's."""

    def __init__(self, env: HostEnv, action_repeat: int) -> None:
        check_action_repeat(
            action_repeat, getattr(env, "episode_frames", None), getattr(env, "name", "the task")
        )
        self.env = env
        self.action_repeat = int(action_repeat)

    def __getattr__(self, name: str) -> Any:
        # Only reached for what this class does not define: the wrapped environment's.
        if name == "env":  # not set yet (unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.env, name)

    def reset(self) -> np.ndarray:
        return self.env.reset()

    def step(self, action: np.ndarray) -> HostStep:
        reward = 0.0
        for _ in range(self.action_repeat):
            step = self.env.step(action)
            reward += step.reward
            if step.last:
                break
        return HostStep(step.next_obs, reward, step.discount, step.last, self.action_repeat)

    def get_state(self) -> dict[str, Any]:
        return self.env.get_state()

    def set_state(self, state: dict[str, Any]) -> None:
        self.env.set_state(state)


def repeat_actions(env: HostEnv, action_repeat: int) -> HostEnv:
    """`env` holding each action for `action_repeat` frames (`env` itself for 1)."""
    if action_repeat == 1:
        return env
    return ActionRepeat(env, action_repeat)
