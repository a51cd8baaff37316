"""Play a trained agent's deterministic policy: returns, and frames to watch.

`jax_rl.render`, `jax_rl.evaluate` and the videos of `--video_every` all play
through a `Player`, one per loop kind, so that the three act exactly as the
training's own evaluation does:

- `HostPlayer` steps a `HostEnv` (dm_control, Gymnasium) with the host loop's
  jitted deterministic action; frames come from the environment's `render`.
- `DevicePlayer` runs the device pipeline's batched environment (Brax,
  Playground) in one jitted `lax.scan` per episode and keeps the joint positions
  of every step; `video.ModelRenderer` draws them afterwards on the host.

An episode's frames are taken every `every` steps (the first state included),
at most `max_steps` steps long; each frame carries a caption with the return
so far.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from types import ModuleType
from typing import Any

import jax
import numpy as np

from jax_rl import video


@dataclasses.dataclass
class Episode:
    """One played episode."""

    episode_return: float
    steps: int
    frames: list[np.ndarray]  # empty when not recorded


@dataclasses.dataclass(frozen=True)
class Recording:
    """What to draw: frames of `size` (width, height) every `every` steps, captioned
    `label` and the return so far."""

    size: tuple[int, int] = video.DEFAULT_SIZE
    every: int = 1
    label: str = ""

    def frame(self, image: np.ndarray, step: int, episode_return: float) -> np.ndarray:
        text = f"{self.label}  step {step}  return {episode_return:.1f}".strip()
        return video.caption(image, text)


class HostPlayer:
    """Plays on one host environment (opened with a render size to record)."""

    def __init__(self, algo: ModuleType, env: Any) -> None:
        from jax_rl.loops.host import make_step_functions

        self.env = env
        # The training's evaluation action; batch_size is not used by it.
        self._act = make_step_functions(algo, batch_size=1).act_deterministic

    def returns(self, agent: Any, episodes: int) -> list[float]:
        """Undiscounted returns of `episodes` episodes, as the training evaluates."""
        from jax_rl.loops.host import evaluate

        return evaluate(self._act, agent, self.env, episodes)

    def play(
        self, agent: Any, recording: Recording | None = None, max_steps: int | None = None
    ) -> Episode:
        """One episode (cut at `max_steps`), drawn as `recording` says."""
        obs, total, steps, last = self.env.reset(), 0.0, 0, False
        frames = [recording.frame(self.env.render(), 0, 0.0)] if recording else []
        while not last and (max_steps is None or steps < max_steps):
            step = self.env.step(np.asarray(self._act(agent, obs)))
            obs, total, last, steps = step.next_obs, total + step.reward, step.last, steps + 1
            if recording is not None and steps % recording.every == 0:
                frames.append(recording.frame(self.env.render(), steps, total))
        return Episode(total, steps, frames)

    def close(self) -> None:
        """Nothing to free: the environment's renderer goes with it."""


class DevicePlayer:
    """Plays on the device pipeline's batched environment; `key` seeds its episodes."""

    def __init__(self, algo: ModuleType, env: Any, loop_config: Any, key: jax.Array) -> None:
        self.algo, self.env, self.loop_config, self.key = algo, env, loop_config, key
        self._renderer: video.ModelRenderer | None = None

    def _next_key(self) -> jax.Array:
        self.key, key = jax.random.split(self.key)
        return key

    def returns(self, agent: Any, episodes: int) -> list[float]:
        """Undiscounted returns of `episodes` episodes run in parallel, as the training
        evaluates (`loops.device.rollout_returns`)."""
        config = dataclasses.replace(self.loop_config, eval_episodes=episodes)
        returns = _evaluate_program(self.algo, self.env, config)(agent, self._next_key())
        return [float(r) for r in jax.device_get(returns)]

    def play(
        self, agent: Any, recording: Recording | None = None, max_steps: int | None = None
    ) -> Episode:
        """One episode (cut at `max_steps`), drawn as `recording` says."""
        length = self.loop_config.episode_length
        program = _episode_program(self.algo, self.env, length)
        qpos, rewards, done = jax.device_get(program(agent, self._next_key()))
        ended = np.flatnonzero(done)
        steps = int(ended[0]) + 1 if len(ended) else length
        if max_steps is not None and max_steps < steps:
            steps = max_steps
        partial = np.concatenate([[0.0], np.cumsum(rewards[:steps], dtype=np.float64)])
        frames = []
        if recording is not None:
            renderer = self._renderer_for(recording.size)
            # qpos[t] is the state the t-th action was chosen in. The state an episode
            # ends in is not kept (the environment resets in the same step), so the
            # last frame is of the state before it.
            for t in range(0, min(steps, length - 1) + 1, recording.every):
                if t < steps or not done[steps - 1]:
                    frames.append(recording.frame(renderer.draw(qpos[t]), t, partial[t]))
        return Episode(float(partial[steps]), steps, frames)

    def _renderer_for(self, size: tuple[int, int]) -> video.ModelRenderer:
        if self._renderer is None:
            model = self.env.mj_model()
            if model is None:
                raise video.RendererUnavailable(f"{self.env.name} has no MuJoCo model to draw")
            self._renderer = video.ModelRenderer(model, *size)
        return self._renderer

    def close(self) -> None:
        """Free the OpenGL context (see `video.ModelRenderer`)."""
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None


@functools.lru_cache(maxsize=4)
def _evaluate_program(algo: ModuleType, env: Any, config: Any) -> Callable[..., jax.Array]:
    """The jitted evaluation rollout of `config.eval_episodes` episodes."""
    from jax_rl.loops.device import rollout_returns

    def evaluate(agent: Any, key: jax.Array) -> jax.Array:
        def policy(obs: jax.Array, step_key: jax.Array) -> jax.Array:
            return algo.act(agent, obs, step_key, deterministic=True)

        return rollout_returns(env, config, policy, key)

    return jax.jit(evaluate)


@functools.lru_cache(maxsize=4)
def _episode_program(algo: ModuleType, env: Any, length: int) -> Callable[..., Any]:
    """The jitted rollout of one environment for `length` steps: joint positions [T, nq]
    of the states acted in, rewards [T] and episode ends [T]."""

    def episode(agent: Any, key: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        reset_key, act_key = jax.random.split(key)

        def step(state: Any, _: None) -> tuple[Any, tuple[jax.Array, ...]]:
            action = algo.act(agent, state.obs, act_key, deterministic=True)
            qpos = env.qpos(state)[0]
            state, transition, info = env.step(state, action)
            return state, (qpos, transition.reward[0], info.done[0])

        _, outputs = jax.lax.scan(step, env.reset(reset_key, 1), None, length)
        return outputs

    return jax.jit(episode)


def make_player(run_kind: str, algo: ModuleType, env: Any, loop_config: Any, seed: int) -> Any:
    """The player of a backend's loop: host for dm_control and Gymnasium, device for the
    rest; `seed` seeds the device player's episodes (a host env carries its own)."""
    if run_kind in HOST_BACKENDS:
        return HostPlayer(algo, env)
    return DevicePlayer(algo, env, loop_config, jax.random.key(seed))


HOST_BACKENDS = ("dm_control", "gymnasium")

