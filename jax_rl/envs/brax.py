"""Batched Brax environments that live on the device, with time limits and fresh resets.

`BraxEnv` vmaps one `brax.envs` environment over `num_envs` copies and adds
what the device pipeline needs and Brax's own training wrappers do not give:

- an episode time limit that marks truncation apart from termination: the
  transition of a truncated step has discount 1 (bootstrap through it), a true
  terminal has discount 0 (DESIGN.md pitfall 2);
- the true final observation in the transition's `next_obs`, never the
  observation after the reset;
- finished environments reset to fresh random initial states drawn with new
  keys (Brax's AutoResetWrapper restores a cached first state instead).

Everything is pure and jittable; `BraxEnv` itself holds only static things.
Shapes: N environments, O observation size, A action size.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import flax.struct
import jax
import jax.numpy as jnp

from jax_rl.core.population import any_agent
from jax_rl.core.transition import Transition
from jax_rl.envs import UnknownEnvironmentError

BACKENDS = ("positional", "spring", "generalized", "mjx")
DEFAULT_BACKEND = "positional"  # the fastest of Brax's pipelines on a CPU
CUSTOM_BACKEND = "custom"  # the backend of an environment `BraxEnv.wrap` wraps


def load_mjx() -> None:
    """Import `mujoco.mjx` (which Brax and Playground import) without its optional GPU
    back end, Warp: importing `warp` takes about 3 of the 5 s that `import brax` takes on a
    CPU, and our pipelines use MJX's JAX implementation only. MJX records that Warp is
    absent (its "Failed to import warp" lines are dropped) and `import warp` works again
    afterwards. A process that imported `warp` or `mujoco.mjx` first keeps what it chose."""
    import sys

    if "mujoco.mjx" in sys.modules or "warp" in sys.modules:
        return
    import contextlib

    from jax_rl.io import quiet

    sys.modules["warp"] = None  # type: ignore[assignment]  # `import warp` raises ImportError
    lines = quiet.LineFilter(sys.stdout, quiet.DROPPED_LINES)
    try:
        with contextlib.redirect_stdout(lines):
            import mujoco.mjx  # noqa: F401
    finally:
        lines.flush()  # a partial last line, if MJX left one
        if "warp" in sys.modules and sys.modules["warp"] is None:
            del sys.modules["warp"]


def environment_names() -> list[str]:
    load_mjx()
    from brax import envs

    return sorted(envs._envs)  # the registry has no public accessor


def check_environment(name: str, backend: str) -> None:
    """Raise UnknownEnvironmentError, listing the valid names, for a bad name or backend."""
    names = environment_names()
    if name not in names:
        raise UnknownEnvironmentError(
            f"unknown Brax environment {name!r}; valid environments: {', '.join(names)}"
        )
    if backend not in BACKENDS:
        raise UnknownEnvironmentError(
            f"unknown Brax backend {backend!r}; valid backends: {', '.join(BACKENDS)}"
        )


class EnvState(flax.struct.PyTreeNode):
    """The state of N environments."""

    physics: Any  # Brax's own State, batched over N
    steps: jax.Array  # [N] int32 steps taken in the current episode
    episode_return: jax.Array  # [N] return of the current episode so far
    key: jax.Array  # for the random initial states of the next resets

    @property
    def obs(self) -> jax.Array:
        """[N, O] the observation the next action is chosen from."""
        return self.physics.obs


class StepInfo(flax.struct.PyTreeNode):
    """What happened at one step of the N environments."""

    done: jax.Array  # [N] bool: the episode ended (terminal or time limit)
    truncated: jax.Array  # [N] bool: it ended by the time limit only
    episode_return: jax.Array  # [N] return of the episode that ended (0 where not done)


def _strongly_typed(tree: Any) -> Any:
    """The tree with JAX's weak types removed.

    Brax builds some fields from Python floats (`done = 0.0`), which makes
    them weakly typed in some states and not in others; a jitted function
    that receives both compiles twice.
    """
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x, dtype=x.dtype), tree)


@dataclasses.dataclass(frozen=True)
class BraxEnv:
    """N copies of the Brax environment `name` with an `episode_length` time limit."""

    name: str
    backend: str = DEFAULT_BACKEND
    episode_length: int = 1000
    _env: Any = dataclasses.field(default=None, repr=False, compare=False)
    # A wrapped custom environment is itself part of the identity (compared by object):
    # two of them under one name must not share compiled programs.
    _custom: Any = dataclasses.field(default=None, repr=False, compare=True)

    @classmethod
    def wrap(cls, name: str, env: Any, episode_length: int = 1000) -> BraxEnv:
        """Any environment with Brax's `Env` API (`reset(key)`, `step(state, action)`,
        `observation_size`, `action_size`, a state with `obs`, `reward`, `done`), under
        `name`: a custom or a test environment, trained like the built-in ones."""
        wrapped = object.__new__(cls)
        for field, value in (
            ("name", name),
            ("backend", CUSTOM_BACKEND),
            ("episode_length", episode_length),
            ("_env", env),
            ("_custom", env),
        ):
            object.__setattr__(wrapped, field, value)
        return wrapped

    def __post_init__(self) -> None:
        check_environment(self.name, self.backend)
        if not isinstance(self.episode_length, int) or self.episode_length <= 0:
            raise ValueError(
                f"episode_length must be a positive integer, got {self.episode_length!r}"
            )
        load_mjx()
        from brax import envs

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Brax warns that it is unmaintained, on every load
            env = envs.get_environment(self.name, backend=self.backend)
        object.__setattr__(self, "_env", env)

    @property
    def obs_size(self) -> int:
        return int(self._env.observation_size)

    @property
    def action_size(self) -> int:
        return int(self._env.action_size)

    @property
    def actor_obs_size(self) -> int:
        """Features of the observation the actor sees: 0 (all), or the `state` part of a
        [state | privileged state] observation (`jax_rl.envs.observation`)."""
        return int(getattr(self._env, "actor_obs_size", 0))

    def mj_model(self) -> Any:
        """The MuJoCo model to draw these environments with (`jax_rl.io.video`), or None for
        one that has none (a custom environment without an `mj_model`)."""
        if self._custom is not None:
            model = getattr(self._custom, "mj_model", None)
            if model is not None:
                return model
        return getattr(getattr(self._env, "sys", None), "mj_model", None)

    def qpos(self, state: EnvState) -> jax.Array:
        """[N, nq] joint positions of the N environments (what `mj_model` is drawn in)."""
        if self._custom is not None and hasattr(self._custom, "qpos"):
            return jax.vmap(self._custom.qpos)(state.physics)
        return state.physics.pipeline_state.q  # a Brax pipeline's state (a custom one's too)

    def _reset_physics(self, key: jax.Array, num_envs: int) -> Any:
        return _strongly_typed(jax.vmap(self._env.reset)(jax.random.split(key, num_envs)))

    def reset(self, key: jax.Array, num_envs: int) -> EnvState:
        """N environments in fresh random initial states."""
        reset_key, key = jax.random.split(key)
        physics = self._reset_physics(reset_key, num_envs)
        return EnvState(
            physics=physics,
            steps=jnp.zeros(num_envs, jnp.int32),
            episode_return=jnp.zeros(num_envs, jnp.float32),
            key=key,
        )

    def step(
        self, state: EnvState, action: jax.Array, reset_finished: bool = True
    ) -> tuple[EnvState, Transition, StepInfo]:
        """Step all N environments with actions [N, A] in [-1, 1]; reset those that ended.

        With `reset_finished` False, an environment that ended steps on from where it
        ended (its counters keep counting): for rollouts that stop counting an episode at
        its end, whose programs then hold no physics initialisation (a few seconds less
        to compile).
        """
        physics = _strongly_typed(jax.vmap(self._env.step)(state.physics, action))
        steps = state.steps + 1
        terminal = physics.done > 0.5
        truncated = (steps >= self.episode_length) & ~terminal
        done = terminal | truncated
        transition = Transition(
            obs=state.obs,
            action=action,
            reward=physics.reward,
            discount=1.0 - terminal.astype(jnp.float32),
            next_obs=physics.obs,
        )
        episode_return = state.episode_return + physics.reward
        info = StepInfo(
            done=done, truncated=truncated, episode_return=jnp.where(done, episode_return, 0.0)
        )

        if not reset_finished:
            return (
                state.replace(physics=physics, steps=steps, episode_return=episode_return),
                transition,
                info,
            )
        key, reset_key = jax.random.split(state.key)
        num_envs = action.shape[0]

        def fresh_where_done(physics: Any) -> Any:
            fresh = self._reset_physics(reset_key, num_envs)
            pick = lambda new, old: jnp.where(  # noqa: E731
                done.reshape(done.shape + (1,) * (old.ndim - 1)), new, old
            )
            return jax.tree_util.tree_map(pick, fresh, physics)

        # Resetting costs a physics initialisation; skip it on the many steps where
        # no environment finished (in a population: no environment of any agent, so
        # that the branch stays a branch under the agents' vmap).
        physics = jax.lax.cond(any_agent(done.any()), fresh_where_done, lambda p: p, physics)
        new_state = EnvState(
            physics=physics,
            steps=jnp.where(done, 0, steps),
            episode_return=jnp.where(done, 0.0, episode_return),
            key=key,
        )
        return new_state, transition, info
