"""Play a trained agent's deterministic policy: returns, and frames to watch.

`jax_rl.watch.render`, `jax_rl.watch.evaluate` and the videos of `--video_every` all play
through a `Player`, one per loop kind, so that the three act exactly as the
training's own evaluation does:

- `HostPlayer` steps a `HostEnv` (dm_control, Gymnasium) with the host loop's
  jitted deterministic action; frames come from the environment's `render`.
- `DevicePlayer` runs the device pipeline's batched environment (Brax,
  Playground): all the episodes in parallel in one jitted `lax.scan`, which
  keeps the joint positions of every step; `video.ModelRenderer` draws them
  afterwards on the host.

An episode's frames are taken every `every` steps (the first state included),
at most `max_steps` steps long; each frame carries a caption with the return
so far.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import numpy as np

from jax_rl.io import video

VIDEO_FPS = 30.0  # of the videos --video_every writes


@dataclasses.dataclass
class Episode:
    """One played episode."""

    episode_return: float
    steps: int  # frames stepped (several per decision under an action repeat)
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
    """Plays on one host environment (opened with a render size to record); its episodes
    follow one another in the environment's own stream of initial states."""

    def __init__(self, algo: ModuleType, env: Any) -> None:
        from jax_rl.loops.host import make_step_functions

        self.env = env
        # The training's evaluation action (batch_size is not used by it).
        self._act = make_step_functions(algo, batch_size=1).act_deterministic

    def play(
        self,
        agent: Any,
        episodes: int = 1,
        recording: Recording | None = None,
        max_steps: int | None = None,
    ) -> list[Episode]:
        """`episodes` episodes (each cut at `max_steps`), drawn as `recording` says;
        played as `loops.host.evaluate` plays the training's evaluations."""
        return [self._episode(agent, recording, max_steps) for _ in range(episodes)]

    def _episode(self, agent: Any, recording: Recording | None, max_steps: int | None) -> Episode:
        obs, total, steps, last = self.env.reset(), 0.0, 0, False
        frames = [recording.frame(self.env.render(), 0, 0.0)] if recording else []
        while not last and (max_steps is None or steps < max_steps):
            step = self.env.step(np.asarray(self._act(agent, obs)))
            before = steps  # steps are frames (several a step under an action repeat)
            obs, total, last, steps = (
                step.next_obs,
                total + step.reward,
                step.last,
                steps + step.frames,
            )
            if recording is not None and before // recording.every < steps // recording.every:
                frames.append(recording.frame(self.env.render(), steps, total))
        return Episode(total, steps, frames)

    def close(self) -> None:
        """Nothing to free: the environment's renderer goes with it."""


class DevicePlayer:
    """Plays on the device pipeline's batched environment; `key` seeds its episodes."""

    def __init__(self, algo: ModuleType, env: Any, loop_config: Any, key: jax.Array) -> None:
        self.algo, self.env, self.loop_config, self.key = algo, env, loop_config, key
        self._renderer: video.ModelRenderer | None = None

    def play(
        self,
        agent: Any,
        episodes: int = 1,
        recording: Recording | None = None,
        max_steps: int | None = None,
    ) -> list[Episode]:
        """`episodes` episodes run in parallel in one compiled rollout (each cut at
        `max_steps`), drawn as `recording` says. A return counts the rewards up to the
        episode's first end, as `loops.device.rollout_returns` does for the training's
        evaluations."""
        length = self.loop_config.episode_length
        self.key, key = jax.random.split(self.key)
        program = _rollout_program(self.algo, self.env, length, episodes)
        qpos, rewards, done = jax.device_get(program(agent, key))
        return [
            self._episode(qpos[:, i], rewards[:, i], done[:, i], recording, max_steps)
            for i in range(episodes)
        ]

    def _episode(
        self,
        qpos: np.ndarray,
        rewards: np.ndarray,
        done: np.ndarray,
        recording: Recording | None,
        max_steps: int | None,
    ) -> Episode:
        """One environment's episode out of a rollout (qpos [T, nq], rewards [T], done [T])."""
        length = len(rewards)
        ended = np.flatnonzero(done)
        steps = int(ended[0]) + 1 if len(ended) else length
        if max_steps is not None and max_steps < steps:
            steps = max_steps
        partial = np.concatenate([[0.0], np.cumsum(rewards[:steps], dtype=np.float64)])
        frames = []
        if recording is not None:
            renderer = self._renderer_for(recording.size)
            # qpos[t] is the state the t-th action was chosen in. The state an episode
            # ends in is not kept (the environment resets in the same step), so its
            # last frame is of the state before.
            last = steps - 1 if done[steps - 1] or steps == length else steps
            for t in range(0, last + 1, recording.every):
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
def _rollout_program(
    algo: ModuleType, env: Any, length: int, episodes: int
) -> Callable[[Any, jax.Array], tuple[jax.Array, jax.Array, jax.Array]]:
    """The jitted rollout of `episodes` environments for `length` steps under the
    deterministic policy: joint positions [T, N, nq] of the states acted in, rewards
    [T, N] and episode ends [T, N]. (One program for rendering and evaluating alike:
    the second command of the two loads it from JAX's compilation cache, if one is set.)"""

    def rollout(agent: Any, key: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        reset_key, act_key = jax.random.split(key)

        def step(state: Any, step_key: jax.Array) -> tuple[Any, tuple[jax.Array, ...]]:
            action = algo.act(agent, state.obs, step_key, deterministic=True)
            qpos = env.qpos(state)
            state, transition, info = env.step(state, action)
            return state, (qpos, transition.reward, info.done)

        keys = jax.random.split(act_key, length)
        _, (qpos, rewards, done) = jax.lax.scan(step, env.reset(reset_key, episodes), keys)
        return qpos, rewards, done

    return jax.jit(rollout)


def make_player(run_kind: str, algo: ModuleType, env: Any, loop_config: Any, seed: int) -> Any:
    """The player of a backend's loop: host for dm_control and Gymnasium, device for the
    rest; `seed` seeds the device player's episodes (a host env carries its own)."""
    if run_kind in HOST_BACKENDS:
        return HostPlayer(algo, env)
    return DevicePlayer(algo, env, loop_config, jax.random.key(seed))


HOST_BACKENDS = ("dm_control", "gymnasium")


class VideoRecorder:
    """--video_every: at every `every` environment steps (and at the end), one episode of
    each agent's deterministic policy as `videos/step-<step>.mp4` in the agent's folder,
    handed to its logger's trackers too. `players[i]` plays agent i."""

    def __init__(
        self, players: Sequence[Any], loggers: Sequence[Any], every: int, recording: Recording
    ) -> None:
        if len(players) != len(loggers):
            raise ValueError(f"{len(players)} players for {len(loggers)} agents")
        self.players, self.loggers = list(players), list(loggers)
        self.every, self.recording = every, recording

    def due(self, before: int, after: int, last: bool) -> bool:
        """Whether the steps from `before` to `after` passed a multiple of `every` (or
        ended the run)."""
        return last or after // self.every > before // self.every

    def record(self, step: int, agent: Callable[[int], Any], skip: Collection[int] = ()) -> None:
        """Play and write every agent's video at `step` (`agent(i)`: agent i's state), but
        those in `skip` (agents that diverged: their actions are NaN)."""
        for i, (player, logger) in enumerate(zip(self.players, self.loggers, strict=True)):
            if i in skip:
                continue
            (episode,) = player.play(agent(i), 1, self.recording)
            path = Path(logger.save_dir) / "videos" / f"step-{step:08d}.mp4"
            video.write_video(path, episode.frames, VIDEO_FPS)
            logger.log_video(step, path, episode.episode_return)

    def close(self) -> None:
        for player in self.players:
            player.close()
