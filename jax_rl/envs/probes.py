"""Probe environments whose right answers are known, for testing learners and loops.

They implement `HostEnv` and run in microseconds, so a broken learner or a
broken loop shows up in seconds instead of after an hour of MuJoCo.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jax_rl.core.random_state import random_state_from_json, random_state_to_json
from jax_rl.envs import HostStep


class ContextualBandit:
    """One-step episodes: observe s ~ U(-1, 1)^O, act, get -|a - target(s)|^2, terminate.

    target(s) = 0.8 * tanh(W s) for a fixed random W, so the best policy
    depends on the observation. The optimal return is 0; a uniform random
    policy averages about -0.75 per action dimension. Every step is a true
    terminal (discount 0).
    """

    def __init__(self, obs_size: int = 3, action_size: int = 2, seed: int = 0) -> None:
        self.obs_size = obs_size
        self.action_size = action_size
        self._rng = np.random.default_rng(seed)
        self._weights = np.random.default_rng(12345).normal(size=(action_size, obs_size))
        self._obs = self._draw()

    def target(self, obs: np.ndarray) -> np.ndarray:
        return (0.8 * np.tanh(self._weights @ obs)).astype(np.float32)

    def _draw(self) -> np.ndarray:
        return self._rng.uniform(-1.0, 1.0, self.obs_size).astype(np.float32)

    def reset(self) -> np.ndarray:
        self._obs = self._draw()
        return self._obs

    def step(self, action: np.ndarray) -> HostStep:
        error = np.asarray(action, np.float32) - self.target(self._obs)
        next_obs = self._draw()  # never used for bootstrapping: discount is 0
        return HostStep(next_obs=next_obs, reward=-float(error @ error), discount=0.0, last=True)

    def get_state(self) -> dict[str, Any]:
        return {"rng": random_state_to_json(self._rng), "obs": self._obs.tolist()}

    def set_state(self, state: dict[str, Any]) -> None:
        random_state_from_json(self._rng, state["rng"])
        self._obs = np.asarray(state["obs"], np.float32)


class Countdown:
    """Episodes of exactly `time_limit` steps that end by time limit, not by termination.

    The observation is [steps left / time_limit, episode index]; every reward is
    1. The last step of an episode has last=True but discount 1, and its
    next_obs is the true final observation [0, episode] -- the first
    observation of the next episode is [1, episode + 1].
    """

    obs_size = 2
    action_size = 1

    def __init__(self, time_limit: int = 5) -> None:
        self.time_limit = time_limit
        self._episode = -1
        self._left = time_limit

    def _obs(self) -> np.ndarray:
        return np.array([self._left / self.time_limit, self._episode], np.float32)

    def reset(self) -> np.ndarray:
        self._episode += 1
        self._left = self.time_limit
        return self._obs()

    def step(self, action: np.ndarray) -> HostStep:
        self._left -= 1
        return HostStep(next_obs=self._obs(), reward=1.0, discount=1.0, last=self._left == 0)

    def get_state(self) -> dict[str, Any]:
        return {"episode": self._episode, "left": self._left}

    def set_state(self, state: dict[str, Any]) -> None:
        self._episode, self._left = state["episode"], state["left"]


class SparseReach:
    """A reward only near one point: a cart on [-1, 1] pays 1 per step beyond x = 0.6, else 0.

    Observation [x, v]; each step v <- 0.9 v + 0.1 a and x <- clip(x + 0.06 v, -1, 1), from
    rest at x = 0; episodes end by a time limit of 50 steps (discount 1). Pushing right
    all the way pays about 30 per episode; to get there the actions must agree for tens of
    steps, which independent noise rarely does (over 1,000 episodes: uniform random actions
    and N(0, 0.3) never meet the reward, N(0, 1) clipped in 1%; pink noise of std 1,
    `jax_rl.core.noise`, with sequences of an episode's length, in 20%): the smallest task on
    which exploration, not learning, decides the return.
    """

    obs_size = 2
    action_size = 1
    time_limit = 50
    episode_frames = float(time_limit)
    name = "sparse-reach"

    def __init__(self) -> None:
        self._x, self._v, self._t = 0.0, 0.0, 0

    def _obs(self) -> np.ndarray:
        return np.array([self._x, self._v], np.float32)

    def reset(self) -> np.ndarray:
        self._x, self._v, self._t = 0.0, 0.0, 0
        return self._obs()

    def step(self, action: np.ndarray) -> HostStep:
        force = float(np.clip(np.asarray(action, np.float32)[0], -1.0, 1.0))
        self._v = 0.9 * self._v + 0.1 * force
        self._x = float(np.clip(self._x + 0.06 * self._v, -1.0, 1.0))
        self._t += 1
        reward = 1.0 if self._x > 0.6 else 0.0
        return HostStep(self._obs(), reward, 1.0, self._t == self.time_limit)

    def get_state(self) -> dict[str, Any]:
        return {"x": self._x, "v": self._v, "t": self._t}

    def set_state(self, state: dict[str, Any]) -> None:
        self._x, self._v, self._t = state["x"], state["v"], state["t"]
