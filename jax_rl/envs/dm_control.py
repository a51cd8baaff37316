"""dm_control suite tasks as `HostEnv`s: flat float32 observations, actions in [-1, 1].

The state a checkpoint keeps (`get_state`) is MuJoCo's full integration state
(time, positions, velocities, actuator activations, controls, the solver's
warm start), the episode's step count and the task's random state. That
continues the suite's tasks exactly; a task that keeps other Python-side
state of its own would not be restored by it.

dm_control observations are dicts of float64 arrays; they are flattened in the
order of the observation spec and cast to float32 (DESIGN.md pitfall 6).

`DMControlEnv.of` adopts an environment made elsewhere (a user's factory handed to
`jax_rl.train`, `jax_rl.envs.custom`): any `dm_control.rl.control.Environment`, the
suite's or one built from a physics and a task of one's own, whose task keeps its
randomness in `task.random` as the suite's do; `check_environment` refuses the others
and the specs the learners cannot take (discrete or unbounded actions, images).
Episodes end by time limit with discount 1 (pitfall 2); the adapter passes
dm_control's own discount through, so a task with true terminals reports 0.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from jax_rl.core.random_state import random_state_from_json, random_state_to_json
from jax_rl.envs import HostStep, UnknownEnvironmentError, UnsupportedEnvironmentError

# Training renders nothing; without this dm_control probes for a display and
# warns on headless machines. A user who wants rendering sets MUJOCO_GL first.
os.environ.setdefault("MUJOCO_GL", "disable")

import dm_env  # noqa: E402
import mujoco  # noqa: E402
from dm_control import suite  # noqa: E402
from dm_control.rl import control  # noqa: E402


def check_task(domain_name: str, task_name: str) -> None:
    """Raise UnknownEnvironmentError, listing the valid names, for an unknown task."""
    tasks: dict[str, list[str]] = {}
    for domain, task in suite.ALL_TASKS:
        tasks.setdefault(domain, []).append(task)
    if domain_name not in tasks:
        raise UnknownEnvironmentError(
            f"unknown dm_control domain {domain_name!r}; valid domains: {', '.join(sorted(tasks))}"
        )
    if task_name not in tasks[domain_name]:
        raise UnknownEnvironmentError(
            f"unknown task {task_name!r} for domain {domain_name!r}; "
            f"valid tasks: {', '.join(sorted(tasks[domain_name]))}"
        )


def flatten_observation(observation: Mapping[str, np.ndarray] | np.ndarray) -> np.ndarray:
    """Concatenate a dm_control observation dict (or one array) into one float32 vector."""
    if not isinstance(observation, Mapping):
        return np.asarray(observation, np.float32).ravel()
    return np.concatenate([np.asarray(v, np.float32).ravel() for v in observation.values()])


def check_environment(name: str, env: Any) -> None:
    """Raise UnsupportedEnvironmentError (one line naming what is needed) unless `env` is
    a dm_control environment the learners can drive and a checkpoint can continue."""
    if not isinstance(env, control.Environment):
        what = "a dm_env.Environment" if isinstance(env, dm_env.Environment) else type(env)
        raise UnsupportedEnvironmentError(
            f"{name} is {what}, not a dm_control.rl.control.Environment (what suite.load "
            "returns, or control.Environment(physics, task)), which jax_rl seeds and saves "
            "through its physics and task"
        )
    if not isinstance(getattr(env.task, "random", None), np.random.RandomState):
        raise UnsupportedEnvironmentError(
            f"{name}'s task has no `random` RandomState (dm_control.suite.base.Task gives "
            "one), which jax_rl seeds each environment's initial states through"
        )
    spec = env.action_spec()
    if not isinstance(spec, dm_env.specs.BoundedArray) or not np.issubdtype(
        spec.dtype, np.floating
    ):
        raise UnsupportedEnvironmentError(
            f"{name} takes {spec}; the learners need continuous actions: a BoundedArray of "
            "floats with finite bounds"
        )
    if not (np.isfinite(spec.minimum).all() and np.isfinite(spec.maximum).all()):
        raise UnsupportedEnvironmentError(
            f"{name}'s action bounds are not finite ({spec}); the learners need finite "
            "bounds (their actions in [-1, 1] are scaled to them)"
        )
    observations = env.observation_spec()
    specs = observations.items() if isinstance(observations, Mapping) else [("", observations)]
    for key, array in specs:
        image = len(array.shape) >= 3 or (len(array.shape) == 2 and array.dtype == np.uint8)
        numeric = np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_
        if image or not numeric:
            what = f"{key!r}: {array}" if key else str(array)
            raise UnsupportedEnvironmentError(
                f"{name} observes {'images' if image else 'values that are not numbers'} "
                f"({what}); the learners need numeric state observations, which are flattened"
            )


class DMControlEnv:
    """One dm_control task. `seed` seeds the task's own random initial states;
    `render_size` (width, height) is the size of the frames `render` draws."""

    def __init__(
        self,
        domain_name: str,
        task_name: str,
        seed: int,
        render_size: tuple[int, int] | None = None,
    ) -> None:
        check_task(domain_name, task_name)
        env = suite.load(domain_name, task_name, task_kwargs={"random": seed})
        self._adopt(env, f"{domain_name}-{task_name}", render_size)

    @classmethod
    def of(
        cls, env: Any, name: str, seed: int, render_size: tuple[int, int] | None = None
    ) -> DMControlEnv:
        """An environment made elsewhere (a user's factory), under `name`: checked
        (`check_environment`), and its task's random state seeded with `seed`, which is
        what the suite's own `task_kwargs={"random": seed}` does."""
        check_environment(name, env)
        env.task.random.seed(seed)
        adapter = cls.__new__(cls)
        adapter._adopt(env, name, render_size)
        return adapter

    def _adopt(self, env: Any, name: str, render_size: tuple[int, int] | None) -> None:
        self.render_size = render_size
        self.name = name
        self._env = env
        spec = self._env.action_spec()
        self._low = spec.minimum.astype(np.float32)
        self._high = spec.maximum.astype(np.float32)
        self.action_size = int(np.prod(spec.shape))
        observations = self._env.observation_spec()
        if not isinstance(observations, Mapping):
            observations = {"observation": observations}
        self.obs_size = sum(int(np.prod(s.shape)) for s in observations.values())
        # The suite's time limit in control steps (inf for a task without one).
        self.episode_frames = float(self._env._step_limit)

    def reset(self) -> np.ndarray:
        return flatten_observation(self._env.reset().observation)

    def step(self, action: np.ndarray) -> HostStep:
        action = np.clip(np.asarray(action, np.float32), -1.0, 1.0)
        scaled = self._low + (action + 1.0) * 0.5 * (self._high - self._low)
        ts = self._env.step(scaled)
        return HostStep(
            next_obs=flatten_observation(ts.observation),
            reward=float(ts.reward),
            discount=float(ts.discount),
            last=ts.last(),
        )

    def render(self) -> np.ndarray:
        """[H, W, 3] uint8: the scene now, from the task's first camera (the suite's
        tracking view). Needs a renderer: MUJOCO_GL set before this module's import."""
        if self.render_size is None:
            raise ValueError(f"{self.name} was opened without a render_size")
        width, height = self.render_size
        physics = self._env.physics
        camera = 0 if physics.model.ncam > 0 else -1
        return np.asarray(physics.render(height=height, width=width, camera_id=camera))

    def get_state(self) -> dict[str, Any]:
        physics = self._env.physics
        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        state = np.empty(mujoco.mj_stateSize(physics.model.ptr, spec), np.float64)
        mujoco.mj_getState(physics.model.ptr, physics.data.ptr, state, spec)
        return {
            "physics": state.tolist(),  # float64 values; Python's JSON floats are exact
            "step_count": int(self._env._step_count),
            "reset_next_step": bool(self._env._reset_next_step),
            "task_random": random_state_to_json(self._env.task.random),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        physics = self._env.physics
        spec = mujoco.mjtState.mjSTATE_INTEGRATION
        values = np.asarray(state["physics"], np.float64)
        if values.shape != (mujoco.mj_stateSize(physics.model.ptr, spec),):
            raise ValueError(f"the saved physics state does not fit {self.name}")
        mujoco.mj_setState(physics.model.ptr, physics.data.ptr, values, spec)
        # Recompute what the next step reads from positions and velocities.
        physics.forward()
        self._env._step_count = state["step_count"]
        self._env._reset_next_step = state["reset_next_step"]
        random_state_from_json(self._env.task.random, state["task_random"])
