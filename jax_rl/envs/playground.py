"""MuJoCo Playground's tasks (MJX) on the device pipeline.

Its DM Control Suite: the same tasks as the host loop's dm_control suite
(CartpoleSwingup, CheetahRun, WalkerWalk, HumanoidRun, ...), simulated by MJX
inside the compiled training chunk. Its locomotion (Go1JoystickFlatTerrain,
T1JoystickFlatTerrain, ...) and manipulation (LeapCubeReorient, ...) tasks load
robot models from MuJoCo Menagerie, which Playground fetches with git on first
use: where it is missing and cannot be fetched (no network), such a task is
refused at start-up with one line that says what to do (`check_assets`). Their
observations are dicts with `state` and `privileged_state`, which the learners
can split between actor and critics (`jax_rl.envs.observation`).

`make_env(name)` returns the pipeline's batched environment
(`envs.brax.BraxEnv`, built with `BraxEnv.wrap`) around `PlaygroundTask`, which
gives one Playground environment Brax's `Env` API (`wrap_env(env, name)` does the
same for a Playground environment object a user made, `jax_rl.envs.custom`):

- the task comes from Playground's registry by name, with its published default
  configuration (`registry.get_default_config`): control and physics
  time steps, episode length, action repeat. Physics runs on MJX's JAX
  implementation (`impl="jax"`), which every JAX device runs; the configs'
  default `warp` needs a CUDA GPU;
- observations are flattened and cast to float32 (`observation.Layout`: a
  dict of arrays concatenated in key order, or [state | privileged state]);
- an action is repeated `action_repeat` times (rewards summed), as
  Playground's own training wrapper does; actions in [-1, 1] are mapped to the
  actuators' control ranges (every DM Control task has [-1, 1]: no change);
- Playground ends an episode early only when the simulation diverges (NaN in
  `qpos` or `qvel`). That is a true terminal (discount 0), and its non-finite
  observation and reward are stored as zeros, so that one diverged simulation
  cannot put NaN into the replay buffer (0 x NaN is still NaN in the TD target).

`BraxEnv` then adds what the pipeline needs, exactly as for Brax's tasks: the
time limit as truncation (discount 1, true final observation) and fresh random
initial states for finished environments. The environment state is
`PlaygroundState`: Playground's whole `State` (the MJX `Data`, metrics, info
with its key) as its non-empty arrays. MJX keeps many arrays of size 0 (no
actuator activations, no contacts, ...) that orbax refuses to save; they hold
nothing, so they are rebuilt from their shapes. Checkpoints hold every other
leaf, so kill and resume is bitwise.

Defaults of the device loop for a Playground task (`task_defaults`): the
episode length and action repeat are Playground's; `num_envs` and
`updates_per_step` are ours, in `TASK_DEFAULTS`. Shapes: O observation size,
A action size.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

from jax_rl.envs import UnknownEnvironmentError, UnsupportedEnvironmentError
from jax_rl.envs.brax import CUSTOM_BACKEND, BraxEnv, load_mjx
from jax_rl.envs.observation import Layout

IMPLS = ("jax",)  # MJX implementations the pipeline runs (warp needs CUDA: not yet)
DEFAULT_IMPL = "jax"


@dataclasses.dataclass(frozen=True)
class LoopDefaults:
    """The device loop's settings for a Playground task when no flag or preset sets them."""

    num_envs: int = 16
    """environments stepped in parallel"""
    updates_per_step: int = 16
    """gradient updates per iteration: 16 x 256 / 16 envs = the host loop's replay ratio
    of 256 (one update of 256 per environment step), which reaches 800+ on
    cartpole-swingup in 100k steps there"""


# Per-task exceptions to `LoopDefaults()`; a task not named here takes the defaults.
TASK_DEFAULTS: dict[str, LoopDefaults] = {}


# The same task in the host loop's dm_control suite (domain, task), for comparisons.
DM_CONTROL_TASKS = {
    "AcrobotSwingup": ("acrobot", "swingup"),
    "AcrobotSwingupSparse": ("acrobot", "swingup_sparse"),
    "BallInCup": ("ball_in_cup", "catch"),
    "CartpoleBalance": ("cartpole", "balance"),
    "CartpoleBalanceSparse": ("cartpole", "balance_sparse"),
    "CartpoleSwingup": ("cartpole", "swingup"),
    "CartpoleSwingupSparse": ("cartpole", "swingup_sparse"),
    "CheetahRun": ("cheetah", "run"),
    "FingerSpin": ("finger", "spin"),
    "FingerTurnEasy": ("finger", "turn_easy"),
    "FingerTurnHard": ("finger", "turn_hard"),
    "FishSwim": ("fish", "swim"),
    "HopperHop": ("hopper", "hop"),
    "HopperStand": ("hopper", "stand"),
    "HumanoidRun": ("humanoid", "run"),
    "HumanoidStand": ("humanoid", "stand"),
    "HumanoidWalk": ("humanoid", "walk"),
    "PendulumSwingup": ("pendulum", "swingup"),
    "PointMass": ("point_mass", "easy"),
    "ReacherEasy": ("reacher", "easy"),
    "ReacherHard": ("reacher", "hard"),
    "SwimmerSwimmer6": ("swimmer", "swimmer6"),
    "WalkerRun": ("walker", "run"),
    "WalkerStand": ("walker", "stand"),
    "WalkerWalk": ("walker", "walk"),
}


@dataclasses.dataclass(frozen=True)
class TaskDefaults:
    """Everything `task_defaults` resolves for one task."""

    num_envs: int
    updates_per_step: int
    episode_length: int  # in the pipeline's steps (Playground's length / action repeat)
    action_repeat: int


class MissingAssetsError(UnknownEnvironmentError):
    """A task whose robot models (MuJoCo Menagerie) are not here and cannot be fetched."""


def suites() -> dict[str, tuple[str, ...]]:
    """Playground's task names per suite: dm_control, locomotion, manipulation."""
    load_mjx()
    from mujoco_playground import dm_control_suite, locomotion, manipulation

    return {
        "dm_control": tuple(dm_control_suite.ALL_ENVS),
        "locomotion": tuple(locomotion.ALL_ENVS),
        "manipulation": tuple(manipulation.ALL_ENVS),
    }


def suite_of(name: str) -> str | None:
    return next((suite for suite, names in suites().items() if name in names), None)


def environment_names() -> list[str]:
    """Every Playground task, sorted."""
    return sorted(name for names in suites().values() for name in names)


def is_task(name: str) -> bool:
    return suite_of(name) is not None


def check_environment(name: str, impl: str = DEFAULT_IMPL) -> None:
    """Raise UnknownEnvironmentError, listing the valid names, for a bad task or impl;
    MissingAssetsError for a task whose robot models cannot be had (`check_assets`)."""
    if not is_task(name):
        raise UnknownEnvironmentError(
            f"unknown Playground task {name!r}; valid tasks: {', '.join(environment_names())}"
        )
    if impl not in IMPLS:
        raise UnknownEnvironmentError(
            f"unknown MJX implementation {impl!r} for a Playground task; valid: {', '.join(IMPLS)}"
        )
    check_assets(name)


def check_assets(name: str) -> None:
    """For a locomotion or manipulation task: MuJoCo Menagerie is present, or Playground's
    own fetch (a git clone) brings it now; else MissingAssetsError saying what to do."""
    if suite_of(name) == "dm_control" or _menagerie_ready():
        return
    from mujoco_playground._src import mjx_env

    raise MissingAssetsError(
        f"Playground task {name} needs MuJoCo Menagerie's robot models, which Playground "
        f"fetches with git on first use, and the fetch failed (no network?): clone "
        f"https://github.com/google-deepmind/mujoco_menagerie at commit "
        f"{mjx_env.MENAGERIE_COMMIT_SHA} into {mjx_env.MENAGERIE_PATH}, then run again"
    )


def _menagerie_ready() -> bool:
    """Whether MuJoCo Menagerie is where Playground looks, fetching it if it is not."""
    import contextlib
    import io

    load_mjx()
    from mujoco_playground._src import mjx_env

    path = mjx_env.MENAGERIE_PATH
    if path.is_dir() and any(path.iterdir()):
        return True
    try:  # Playground prints its progress; the caller's one line says what happened
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            mjx_env.ensure_menagerie_exists()
    except Exception:  # noqa: BLE001 - any failure of the fetch ends the same way
        return False
    return path.is_dir() and any(path.iterdir())


def published_config(name: str) -> Any:
    """Playground's default configuration of task `name` (an ml_collections ConfigDict)."""
    load_mjx()
    from mujoco_playground import registry

    return registry.get_default_config(name)


def task_defaults(name: str) -> TaskDefaults:
    """The device loop's defaults for task `name`: the one place they come from."""
    return _defaults(published_config(name), TASK_DEFAULTS.get(name, LoopDefaults()))


def defaults_of(env: Any) -> TaskDefaults:
    """The device loop's defaults for a Playground environment object: its own
    configuration's episode length and action repeat (1000 and 1 where it has none)."""
    return _defaults(getattr(env, "_config", None) or {}, LoopDefaults())


def _defaults(config: Any, loop: LoopDefaults) -> TaskDefaults:
    repeat = int(config.get("action_repeat", 1))
    return TaskDefaults(
        num_envs=loop.num_envs,
        updates_per_step=loop.updates_per_step,
        episode_length=math.ceil(int(config.get("episode_length", 1000)) / repeat),
        action_repeat=repeat,
    )


def _load(name: str, impl: str) -> Any:
    load_mjx()
    import mujoco
    from mujoco_playground import registry

    if not hasattr(mujoco.MjSpec, "find_body"):
        # Playground 0.2.0's reacher picks `find_body` by comparing version strings
        # ("3.17.0" >= "3.3.0" is False); MuJoCo renamed it `body` in 3.3.
        mujoco.MjSpec.find_body = mujoco.MjSpec.body
    return registry.load(name, config_overrides={"impl": impl})


class PlaygroundState(flax.struct.PyTreeNode):
    """One environment's state: what the pipeline reads, and Playground's `State` packed."""

    obs: jax.Array  # [O] float32, flattened
    reward: jax.Array  # [] float32
    done: jax.Array  # [] float32: 1 at a true terminal
    arrays: tuple[jax.Array, ...]  # the non-empty leaves of Playground's (data, metrics, info)


@dataclasses.dataclass(frozen=True)
class _Layout:
    """Where the non-empty leaves go back in Playground's (data, metrics, info)."""

    treedef: Any
    empty: tuple[tuple[int, jax.ShapeDtypeStruct], ...]  # (position, shape) of size-0 leaves

    @classmethod
    def of(cls, parts: Any) -> _Layout:
        leaves, treedef = jax.tree_util.tree_flatten(parts)
        empty = tuple((i, x) for i, x in enumerate(leaves) if math.prod(x.shape) == 0)
        return cls(treedef, empty)

    def pack(self, parts: Any) -> tuple[jax.Array, ...]:
        positions = {i for i, _ in self.empty}
        return tuple(
            x for i, x in enumerate(jax.tree_util.tree_leaves(parts)) if i not in positions
        )

    def unpack(self, arrays: tuple[jax.Array, ...]) -> Any:
        leaves = list(arrays)
        for i, shape in self.empty:
            leaves.insert(i, jnp.zeros(shape.shape, shape.dtype))
        return jax.tree_util.tree_unflatten(self.treedef, leaves)


@dataclasses.dataclass(frozen=True)
class PlaygroundTask:
    """One Playground DM Control task with Brax's `Env` API (unbatched; `BraxEnv` vmaps it).

    Equal tasks (same name, implementation, action repeat, observation mode) compare
    equal, so they share the pipeline's compiled programs; a task around an environment
    object (`of`) is equal only to one around the same object.
    """

    name: str
    impl: str = DEFAULT_IMPL
    action_repeat: int = 1
    asymmetric_obs: str = "auto"  # observation.MODES
    custom: Any = dataclasses.field(default=None, repr=False, compare=True)  # a user's object
    _env: Any = dataclasses.field(default=None, repr=False, compare=False)
    _ctrl_scale: Any = dataclasses.field(default=None, repr=False, compare=False)
    _layout: Any = dataclasses.field(default=None, repr=False, compare=False)
    _obs_layout: Any = dataclasses.field(default=None, repr=False, compare=False)
    _reset: Any = dataclasses.field(default=None, repr=False, compare=False)

    @classmethod
    def of(
        cls, env: Any, name: str, action_repeat: int = 1, asymmetric_obs: str = "auto"
    ) -> PlaygroundTask:
        """A Playground environment object made elsewhere (a user's), under `name`."""
        return cls(name, CUSTOM_BACKEND, action_repeat, asymmetric_obs, custom=env)

    def __post_init__(self) -> None:
        if self.custom is None:
            check_environment(self.name, self.impl)
            env = _load(self.name, self.impl)
        else:
            env = self.custom
        object.__setattr__(self, "_env", env)
        ranges = np.asarray(env.mj_model.actuator_ctrlrange, np.float32)
        limited = np.asarray(env.mj_model.actuator_ctrllimited, bool)
        low = np.where(limited, ranges[:, 0], -1.0).astype(np.float32)
        high = np.where(limited, ranges[:, 1], 1.0).astype(np.float32)
        identity = bool(np.all(low == -1.0) and np.all(high == 1.0))
        object.__setattr__(self, "_ctrl_scale", None if identity else (low, high))
        shapes = jax.eval_shape(env.reset, jax.random.PRNGKey(0))
        images = [k for k, x in _named_leaves(shapes.obs) if len(x.shape) >= 3]
        if images:
            raise UnsupportedEnvironmentError(
                f"{self.name} observes images ({', '.join(images)}); the learners need state "
                "observations (arrays or a dict of them), which are flattened"
            )
        object.__setattr__(self, "_layout", _Layout.of((shapes.data, shapes.metrics, shapes.info)))
        layout = Layout.of(shapes.obs, self.asymmetric_obs, f"Playground task {self.name}")
        object.__setattr__(self, "_obs_layout", layout)
        # Jitted: the loop builds its first states outside any compiled program, and MJX's
        # initialisation run op by op costs half a minute on a CPU; compiled, a few seconds.
        object.__setattr__(self, "_reset", jax.jit(lambda key: self._pack(env.reset(key))))

    @property
    def observation_size(self) -> int:
        return int(self._obs_layout.size)

    @property
    def actor_obs_size(self) -> int:
        """Features the actor sees (0: all; > 0: [state | privileged state])."""
        return int(self._obs_layout.actor_size)

    @property
    def action_size(self) -> int:
        return int(self._env.action_size)

    @property
    def mj_model(self) -> Any:
        """The task's MuJoCo model (to draw it with, `jax_rl.io.video`)."""
        return self._env.mj_model

    def qpos(self, state: PlaygroundState) -> jax.Array:
        """[nq] joint positions of one environment."""
        return self._unpack(state).data.qpos

    def reset(self, key: jax.Array) -> PlaygroundState:
        """A fresh random initial state (Playground takes a raw uint32 key)."""
        raw = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
        return self._reset(raw)

    def _pack(self, state: Any) -> PlaygroundState:
        return PlaygroundState(
            obs=self._obs_layout.flatten(state.obs),
            reward=jnp.asarray(state.reward, jnp.float32),
            done=jnp.asarray(state.done, jnp.float32),
            arrays=self._layout.pack((state.data, state.metrics, state.info)),
        )

    def _unpack(self, state: PlaygroundState) -> Any:
        from mujoco_playground import State

        data, metrics, info = self._layout.unpack(state.arrays)
        return State(data, state.obs, state.reward, state.done, metrics, info)

    def _control(self, action: jax.Array) -> jax.Array:
        if self._ctrl_scale is None:
            return action
        low, high = self._ctrl_scale
        return low + (action + 1.0) * 0.5 * (high - low)

    def step(self, state: PlaygroundState, action: jax.Array) -> PlaygroundState:
        """`action_repeat` physics steps of Playground's `step`; rewards summed."""
        control = self._control(action)

        def repeat(s: Any, _: None) -> tuple[Any, jax.Array]:
            s = self._env.step(s, control)
            return s, s.reward

        after, rewards = jax.lax.scan(repeat, self._unpack(state), None, self.action_repeat)
        new = self._pack(after.replace(reward=jnp.sum(rewards)))
        diverged = ~(jnp.isfinite(new.obs).all() & jnp.isfinite(new.reward))
        return new.replace(
            obs=jnp.where(diverged, 0.0, new.obs),
            reward=jnp.where(diverged, 0.0, new.reward),
            done=jnp.maximum(new.done, diverged.astype(jnp.float32)),
        )


def _named_leaves(tree: Any) -> list[tuple[str, Any]]:
    """(path, leaf) of every leaf of an observation (one leaf: path "obs")."""
    leaves = jax.tree_util.tree_leaves_with_path(tree)
    return [(jax.tree_util.keystr(path) or "obs", leaf) for path, leaf in leaves]


def wrap_env(
    env: Any, name: str, episode_length: int | None = None, asymmetric_obs: str = "auto"
) -> BraxEnv:
    """The device pipeline's batched environment around a Playground environment object
    (`registry.load(...)`'s, or one of a user's own classes), under `name`; episode
    length and action repeat default to the object's configuration (`defaults_of`)."""
    defaults = defaults_of(env)
    length = defaults.episode_length if episode_length is None else episode_length
    task = PlaygroundTask.of(env, name, defaults.action_repeat, asymmetric_obs)
    return BraxEnv.wrap(name, task, episode_length=length)


def make_env(
    name: str,
    impl: str = DEFAULT_IMPL,
    episode_length: int | None = None,
    action_repeat: int | None = None,
    asymmetric_obs: str = "auto",
) -> BraxEnv:
    """The device pipeline's batched environment for Playground task `name`.

    `episode_length` (pipeline steps) and `action_repeat` default to the task's
    published configuration (`task_defaults`); `asymmetric_obs` is an
    `observation.MODES` (raises NoPrivilegedStateError for "on" on a task without
    a privileged state).
    """
    check_environment(name, impl)
    defaults = task_defaults(name)
    repeat = defaults.action_repeat if action_repeat is None else action_repeat
    length = defaults.episode_length if episode_length is None else episode_length
    for field, value in (("episode_length", length), ("action_repeat", repeat)):
        if not isinstance(value, int) or value <= 0:
            raise ValueError(f"{field} must be a positive integer, got {value!r}")
    task = PlaygroundTask(name, impl, repeat, asymmetric_obs)
    return BraxEnv.wrap(name, task, episode_length=length)
