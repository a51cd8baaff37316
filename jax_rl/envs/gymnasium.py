"""Gymnasium environments as `HostEnv`s: flat float32 observations, actions in [-1, 1].

Any registered Gymnasium environment with a `Box` action space (finite bounds) and
a flat (1-D) `Box` observation space works; `check_env` refuses the others (discrete
actions, images, dict observations) with one line before anything compiles. The
MuJoCo tasks (HalfCheetah-v5, Hopper-v5, ...) are the ones we test and report. An id
in Gymnasium's `module:Env-vN` form imports `module` first (which registers
`Env-vN`: a user's own environment, `registered_id`); `GymnasiumEnv.of` adopts an
environment already made (by a factory handed to `jax_rl.train`, `jax_rl.envs.custom`).

Episode ends: `terminated` is a true terminal (discount 0); `truncated` alone (the
`TimeLimit`) bootstraps (discount 1) from the observation the step returned, the
true final one: a single `gymnasium.Env` never auto-resets, the loop resets it
(DESIGN.md pitfall 2).

Seeding: the first `reset` passes `seed` (`reset(seed=seed)`), later ones pass none,
so an environment's initial states are one stream from its seed, as dm_control's are.

The state a checkpoint keeps (`get_state`), all JSON-compatible:
- always: the `TimeLimit`'s elapsed steps and the environment's `np_random`
  generator (which draws the initial states);
- a MuJoCo environment (one with `model` and `data`): MuJoCo's full integration state
  (time, qpos, qvel, act, ctrl, applied forces, mocap, the solver's warm start
  qacc_warmstart), and the derived kinematics and forces of the last step
  (`DERIVED_FIELDS`: Ant and Humanoid read body positions before they step, which
  after a step lag the state by one substep; recomputing them would not continue
  exactly). Gymnasium's MuJoCo tasks keep nothing else (Reacher's goal is in qpos);
  a MuJoCo environment that keeps state in Python attributes of its own would not
  have those restored;
- any other environment: its `state` attribute if it is a NumPy array (the classic
  control tasks, e.g. Pendulum-v1 and MountainCarContinuous-v0, keep all their
  dynamics there; Pendulum's `last_u`, used only for rendering, is not kept).
  Nothing else: an environment that keeps its dynamics elsewhere (Box2D's world, for
  example) resumes its episode in progress from the state of a fresh reset, and
  `set_state` warns that the run then differs from an uninterrupted one.

No display is opened for training: environments are made with `render_mode=None`
(only a `render_size` asks for `rgb_array` frames, for videos), so no OpenGL
context is created (glfw's library is loaded by Gymnasium's import, not
initialised), and MUJOCO_GL is left as the user set it.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from typing import Any, cast

import gymnasium
import mujoco
import numpy as np

from jax_rl.core.random_state import random_state_from_json, random_state_to_json
from jax_rl.envs import HostStep, UnknownEnvironmentError, UnsupportedEnvironmentError

# What MuJoCo computes from the state inside a step and Python code may read before
# the next one; after a step they belong to the start of its last substep.
DERIVED_FIELDS = (
    "xpos", "xquat", "xmat", "xipos", "ximat", "geom_xpos", "geom_xmat", "site_xpos",
    "site_xmat", "subtree_com", "cinert", "cvel", "cacc", "cfrc_int", "cfrc_ext",
    "qfrc_actuator", "actuator_force", "sensordata",
)  # fmt: skip


def mujoco_ids() -> list[str]:
    """The installed Gymnasium MuJoCo environments (v2/v3 need mujoco-py: left out)."""
    return sorted(
        env_id
        for env_id, spec in gymnasium.registry.items()
        if isinstance(spec.entry_point, str)
        and spec.entry_point.startswith("gymnasium.envs.mujoco.")
    )


def registered_id(env_id: str) -> str:
    """The registry's id for `env_id`: itself, or for Gymnasium's `module:Env-vN` form
    (`gymnasium.make` takes it too) `Env-vN`, once `module` is imported here, which
    registers it. UnknownEnvironmentError (one line) for a module that does not import,
    whatever it raises, or that registers no such id."""
    module, colon, name = env_id.partition(":")
    if not colon:
        return env_id
    if not module or not name:
        raise UnknownEnvironmentError(
            f"Gymnasium id {env_id!r}: give module:Env-vN (importing the module registers "
            "Env-vN), e.g. my_pkg.envs:MyEnv-v0"
        )
    try:
        importlib.import_module(module)
    except Exception as e:  # noqa: BLE001 - whatever the user's module raises: one line
        raise UnknownEnvironmentError(
            f"Gymnasium id {env_id!r}: module {module!r} does not import "
            f"({type(e).__name__}: {_first_line(e)}); it must be importable (installed, or "
            "on PYTHONPATH)"
        ) from None
    if name not in gymnasium.registry:
        raise UnknownEnvironmentError(
            f"Gymnasium id {env_id!r}: module {module!r} imports but registers no {name!r} "
            f"(gymnasium.register(id={name!r}, entry_point=...) in it would)"
        )
    return name


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def make(
    env_id: str, max_episode_steps: int | None = None, render_size: tuple[int, int] | None = None
) -> gymnasium.Env:
    """`gymnasium.make`, raising UnknownEnvironmentError (one line) where it cannot; with
    `render_size` (width, height) it renders `rgb_array` frames of that size. A
    `module:Env-vN` id imports its module first (`registered_id`)."""
    if registered_id(env_id) not in gymnasium.registry:
        raise UnknownEnvironmentError(
            f"unknown Gymnasium environment {env_id!r}; installed MuJoCo environments: "
            f"{', '.join(mujoco_ids())} (any registered id with Box actions and flat Box "
            "observations works)"
        )
    try:
        if render_size is None:
            return gymnasium.make(env_id, max_episode_steps=max_episode_steps)
        return _make_rendering(env_id, max_episode_steps, render_size)
    except (gymnasium.error.Error, ImportError) as e:
        raise UnknownEnvironmentError(
            f"Gymnasium environment {env_id!r} cannot be made: {_first_line(e)}"
        ) from None


def _make_rendering(
    env_id: str, max_episode_steps: int | None, render_size: tuple[int, int]
) -> gymnasium.Env:
    """The environment drawing `rgb_array` frames: of `render_size` where it takes a size
    (the MuJoCo tasks do), else of its own size."""
    width, height = render_size
    try:
        return gymnasium.make(
            env_id,
            max_episode_steps=max_episode_steps,
            render_mode="rgb_array",
            width=width,
            height=height,
        )
    except TypeError:  # an environment without width and height arguments
        return gymnasium.make(env_id, max_episode_steps=max_episode_steps, render_mode="rgb_array")


def check_spaces(env_id: str, env: gymnasium.Env) -> None:
    """Raise UnsupportedEnvironmentError (one line naming what they need) unless the
    learners can drive `env`."""
    action, observation = env.action_space, env.observation_space
    if not isinstance(action, gymnasium.spaces.Box):
        raise UnsupportedEnvironmentError(
            f"{env_id} has {type(action).__name__} actions; the learners need continuous "
            "(Box) actions: a 1-D Box with finite bounds"
        )
    if len(action.shape) != 1 or not (
        np.isfinite(action.low).all() and np.isfinite(action.high).all()
    ):
        raise UnsupportedEnvironmentError(
            f"{env_id}'s action space {action} is not a 1-D Box with finite bounds, which the "
            "learners need (their actions in [-1, 1] are scaled to the bounds)"
        )
    if isinstance(observation, gymnasium.spaces.Dict):
        raise UnsupportedEnvironmentError(
            f"{env_id} observes a Dict ({', '.join(map(str, observation.spaces))}); the "
            "learners need flat (1-D Box) observations (gymnasium.wrappers.FlattenObservation "
            "makes one of a Dict of Boxes)"
        )
    if not isinstance(observation, gymnasium.spaces.Box) or len(observation.shape) != 1:
        what = "images" if len(getattr(observation, "shape", None) or ()) == 3 else observation
        raise UnsupportedEnvironmentError(
            f"{env_id} observes {what}; the learners need flat (1-D Box) observations"
        )


def check_env(env_id: str) -> None:
    """Raise UnknownEnvironmentError (one line) for an environment the learners cannot
    drive: an unknown id (the message lists the MuJoCo ones), one that cannot be made,
    discrete actions, image or other non-flat observations."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "out of date" notes; training shows them
        env = make(env_id)
    try:
        check_spaces(env_id, env)
    finally:
        env.close()


class GymnasiumEnv:
    """One Gymnasium environment. `seed` seeds its first reset (and so its initial
    states); `max_episode_steps` overrides the registered time limit; with `render_size`
    (width, height) `render` draws frames (Gymnasium's `rgb_array` mode)."""

    def __init__(
        self,
        env_id: str,
        seed: int,
        max_episode_steps: int | None = None,
        render_size: tuple[int, int] | None = None,
    ) -> None:
        self._adopt(make(env_id, max_episode_steps, render_size), env_id, seed, render_size)

    @classmethod
    def of(
        cls, env: gymnasium.Env, name: str, seed: int, render_size: tuple[int, int] | None = None
    ) -> GymnasiumEnv:
        """An environment made elsewhere (a user's factory), under `name`, seeded and
        checked as a registered one. It draws frames (`render_size`) only if it was made
        with `render_mode="rgb_array"`, at its own size: UnsupportedEnvironmentError if not."""
        if render_size is not None and env.render_mode != "rgb_array":
            raise UnsupportedEnvironmentError(
                f"{name} draws no frames (render_mode={env.render_mode!r}); to render or "
                "record it, its factory must make it with render_mode='rgb_array'"
            )
        adapter = cls.__new__(cls)
        adapter._adopt(env, name, seed, render_size)
        return adapter

    def _adopt(
        self, env: gymnasium.Env, name: str, seed: int, render_size: tuple[int, int] | None
    ) -> None:
        self.name = name
        self.render_size = render_size
        self._env = env
        check_spaces(name, self._env)
        self._seed = seed
        self._seeded = False
        space = cast(gymnasium.spaces.Box, self._env.action_space)
        self._dtype = space.dtype
        self._low = space.low.astype(np.float32)
        self._high = space.high.astype(np.float32)
        self.action_size = int(space.shape[0])
        self.obs_size = int(cast(gymnasium.spaces.Box, self._env.observation_space).shape[0])
        self._time_limit = _find_wrapper(self._env, gymnasium.wrappers.TimeLimit)
        self.episode_frames = (
            None if self._time_limit is None else float(self._time_limit._max_episode_steps)
        )
        self._warned = False

    @property
    def unwrapped(self) -> Any:
        return self._env.unwrapped

    def reset(self) -> np.ndarray:
        seed, self._seeded = (None if self._seeded else self._seed), True
        obs, _ = self._env.reset(seed=seed)
        return np.asarray(obs, np.float32)

    def step(self, action: np.ndarray) -> HostStep:
        action = np.clip(np.asarray(action, np.float32), -1.0, 1.0)
        scaled = self._low + (action + 1.0) * 0.5 * (self._high - self._low)
        obs, reward, terminated, truncated, _ = self._env.step(scaled.astype(self._dtype))
        return HostStep(
            next_obs=np.asarray(obs, np.float32),  # the true final one at a time limit
            reward=float(reward),
            discount=0.0 if terminated else 1.0,
            last=bool(terminated or truncated),
        )

    def render(self) -> np.ndarray:
        """[H, W, 3] uint8: the scene now, as the environment draws it."""
        if self.render_size is None:
            raise ValueError(f"{self.name} was opened without a render_size")
        return np.asarray(self._env.render())[..., :3]

    def get_state(self) -> dict[str, Any]:
        env = self.unwrapped
        state: dict[str, Any] = {
            "seeded": self._seeded,
            "elapsed_steps": _elapsed_steps(self._time_limit),
            # Read only once seeded: Gymnasium seeds an unseeded generator from entropy.
            "np_random": random_state_to_json(env.np_random) if self._seeded else None,
        }
        if _is_mujoco(env):
            spec = mujoco.mjtState.mjSTATE_INTEGRATION
            physics = np.empty(mujoco.mj_stateSize(env.model, spec), np.float64)
            mujoco.mj_getState(env.model, env.data, physics, spec)
            state["physics"] = physics.tolist()  # float64; Python's JSON floats are exact
            state["derived"] = {f: getattr(env.data, f).ravel().tolist() for f in DERIVED_FIELDS}
        elif isinstance(getattr(env, "state", None), np.ndarray):
            state["state"] = {"values": env.state.tolist(), "dtype": str(env.state.dtype)}
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        if not state["seeded"]:
            return  # never reset: as fresh as this one
        if not self._seeded:
            self.reset()  # every wrapper in the state of a reset environment, then overwrite
        env = self.unwrapped
        random_state_from_json(env.np_random, state["np_random"])
        if self._time_limit is not None:
            self._time_limit._elapsed_steps = state["elapsed_steps"]
        if "physics" in state:
            _set_mujoco_state(self.name, env, state)
        elif "state" in state:
            env.state = np.asarray(state["state"]["values"], state["state"]["dtype"])
        elif not self._warned:
            self._warned = True
            print(
                f"warning: {self.name}'s simulator state is not restored (only its time limit "
                "and random generator): its episode in progress continues from a fresh reset, "
                "so this run differs from an uninterrupted one",
                file=sys.stderr,
            )


def _set_mujoco_state(name: str, env: Any, state: dict[str, Any]) -> None:
    spec = mujoco.mjtState.mjSTATE_INTEGRATION
    physics = np.asarray(state["physics"], np.float64)
    if physics.shape != (mujoco.mj_stateSize(env.model, spec),):
        raise ValueError(f"the saved physics state does not fit {name}")
    mujoco.mj_setState(env.model, env.data, physics, spec)
    mujoco.mj_forward(env.model, env.data)
    mujoco.mj_rnePostConstraint(env.model, env.data)
    # Then the last step's own values (they lag the state by one substep).
    for field, values in state["derived"].items():
        getattr(env.data, field)[...] = np.reshape(values, getattr(env.data, field).shape)


def _is_mujoco(env: Any) -> bool:
    return isinstance(getattr(env, "model", None), mujoco.MjModel) and isinstance(
        getattr(env, "data", None), mujoco.MjData
    )


def _find_wrapper(env: Any, kind: type) -> Any:
    while isinstance(env, gymnasium.Wrapper):
        if isinstance(env, kind):
            return env
        env = env.env
    return None


def _elapsed_steps(time_limit: Any) -> int | None:
    if time_limit is None or time_limit._elapsed_steps is None:
        return None
    return int(time_limit._elapsed_steps)
