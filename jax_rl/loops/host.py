"""Host loop: Python steps the environment, one jitted call per step learns.

Per environment step there is exactly one jitted, donated call:
- during the warm-up (`start_timesteps` uniform random actions) `collect`
  inserts the transition;
- afterwards `learn` inserts the transition, samples a batch, does one
  update and returns the next exploration action (sampled, or noised for
  TD3: the agent explores while collecting, DESIGN.md pitfall 1).

"After the warm-up" means once the buffer holds `start_timesteps`
transitions. Metrics are summed on the device and read only at logging
points; nothing else is pulled to the host except the action the
environment needs.

With a `RunControl` the loop writes a full checkpoint every `every` steps,
at the end and on SIGINT/SIGTERM, and can resume from one: the learner
(parameters, targets, optimizer states, keys, replay buffer), the host-side
random states, both environments' states and the logs' position are all
restored, so a resumed run continues exactly as the uninterrupted one would
(see `DMControlEnv.get_state` for what of dm_control is restored).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from types import ModuleType
from typing import Any

import flax.serialization
import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

from jax_rl import replay as replay_lib
from jax_rl.checkpoint import all_finite
from jax_rl.envs import HostEnv, random_state_from_json, random_state_to_json
from jax_rl.logger import RunLogger
from jax_rl.loops.common import (
    Interrupted,
    NonFiniteError,
    RunControl,
    StopSignals,
    check_collection,
    check_finite,
    check_positive_ints,
    pull_metrics,
    replay_capacity,
    zero_metrics,
)
from jax_rl.transition import Array, Transition


@dataclasses.dataclass(frozen=True)
class HostLoopConfig:
    """How long to train and how to collect, evaluate and log."""

    max_timesteps: int = 100_000
    """environment steps in total, warm-up included"""
    start_timesteps: int = 5_000
    """uniform random steps before learning starts"""
    batch_size: int = 256
    """transitions per gradient update"""
    replay_size: int | None = None
    """replay capacity; default min(max_timesteps, 1,000,000)"""
    eval_freq: int = 5_000
    """environment steps between evaluations (one also runs at step 0 and at the end)"""
    eval_episodes: int = 10
    """episodes per evaluation of the deterministic policy"""
    log_freq: int = 1_000
    """environment steps between rows of train.csv"""
    seed: int = 0
    """seed of the learner, the warm-up actions and the environments"""

    def __post_init__(self) -> None:
        check_positive_ints(
            self,
            (
                "max_timesteps",
                "start_timesteps",
                "batch_size",
                "eval_freq",
                "eval_episodes",
                "log_freq",
            ),
        )
        check_collection(self)

    @property
    def capacity(self) -> int:
        return replay_capacity(self.max_timesteps, self.replay_size)


class Learner(flax.struct.PyTreeNode):
    """Everything the per-step call carries (and donates) from step to step."""

    agent: Any
    replay: replay_lib.ReplayState
    key: jax.Array
    metric_sums: dict[str, jax.Array]  # summed since the last log row
    num_updates: jax.Array  # updates since the last log row


@dataclasses.dataclass(frozen=True)
class StepFunctions:
    """The jitted calls of the loop; `collect` and `learn` donate the learner."""

    collect: Callable[[Learner, Transition], Learner]
    learn: Callable[[Learner, Transition, Array], tuple[Learner, jax.Array]]
    act_deterministic: Callable[[Any, Array], jax.Array]


def _single_row(transition: Transition) -> Transition:
    return jax.tree_util.tree_map(lambda x: jnp.asarray(x, jnp.float32)[None], transition)


def make_step_functions(algo: ModuleType, batch_size: int) -> StepFunctions:
    """Build the loop's jitted calls for learner module `algo`."""

    def collect(learner: Learner, transition: Transition) -> Learner:
        return learner.replace(replay=replay_lib.insert(learner.replay, _single_row(transition)))

    def learn(
        learner: Learner, transition: Transition, act_obs: jax.Array
    ) -> tuple[Learner, jax.Array]:
        key, sample_key, update_key, act_key = jax.random.split(learner.key, 4)
        replay = replay_lib.insert(learner.replay, _single_row(transition))
        batch = replay_lib.sample(replay, sample_key, batch_size)
        agent, metrics = algo.update(learner.agent, batch, update_key)
        action = algo.act(agent, act_obs[None], act_key, deterministic=False)[0]
        sums = jax.tree_util.tree_map(jnp.add, learner.metric_sums, metrics)
        learner = Learner(agent, replay, key, sums, learner.num_updates + 1)
        return learner, action

    def act_deterministic(agent: Any, obs: jax.Array) -> jax.Array:
        # A deterministic policy draws no randomness; the key is a placeholder.
        return algo.act(agent, obs[None], jax.random.key(0), deterministic=True)[0]

    return StepFunctions(
        collect=jax.jit(collect, donate_argnums=0),
        learn=jax.jit(learn, donate_argnums=0),
        act_deterministic=jax.jit(act_deterministic),
    )


def init_learner(
    algo: ModuleType,
    algo_config: Any,
    obs_size: int,
    action_size: int,
    capacity: int,
    batch_size: int,
    key: jax.Array,
) -> Learner:
    """A fresh learner with an empty buffer (refused if it will not fit in memory)."""
    spec = replay_lib.ReplaySpec(capacity=capacity, obs_size=obs_size, action_size=action_size)
    replay = replay_lib.create(spec)
    agent_key, key = jax.random.split(key)
    agent = algo.init(agent_key, obs_size, action_size, algo_config)
    sums = zero_metrics(algo, agent, replay_lib.sample(replay, key, batch_size), key)
    return Learner(agent, replay, key, sums, jnp.int32(0))


def evaluate(
    act_fn: Callable[[Any, Array], jax.Array], agent: Any, env: HostEnv, episodes: int
) -> list[float]:
    """Undiscounted returns of the deterministic policy over `episodes` episodes."""
    returns = []
    for _ in range(episodes):
        obs, total, last = env.reset(), 0.0, False
        while not last:
            step = env.step(np.asarray(act_fn(agent, obs)))
            obs, total, last = step.next_obs, total + step.reward, step.last
        returns.append(total)
    return returns


@dataclasses.dataclass
class TrainResult:
    learner: Learner
    evaluations: list[dict[str, float]]  # one row per evaluation, as in evaluations.csv
    step_functions: StepFunctions


class Collector:
    """Steps one host environment and makes the loop's one jitted call per step.

    Holds the learner, the current observation, the action to take next and
    the episode bookkeeping. `train` drives it; the benchmark times it.
    """

    def __init__(
        self,
        env: HostEnv,
        fns: StepFunctions,
        learner: Learner,
        start_timesteps: int,
        seed: int,
    ) -> None:
        self.env = env
        self.fns = fns
        self.learner = learner
        self.start_timesteps = start_timesteps
        self.learn_from = start_timesteps  # the step from which `learn` replaces `collect`
        self.steps = 0
        self.episode_return = 0.0
        self.last_episode_return = float("nan")
        self._warmup_rng = np.random.default_rng(seed)
        self._obs = env.reset()
        self._action = np.zeros(env.action_size, np.float32)

    def step(self) -> None:
        """One environment step and one jitted call (collect or learn)."""
        if self.steps < self.learn_from:
            self._action = self._warmup_rng.uniform(-1.0, 1.0, self.env.action_size).astype(
                np.float32
            )
        elif not np.all(np.isfinite(self._action)):
            raise NonFiniteError(self.steps, "action", None)
        step = self.env.step(self._action)
        transition = Transition(
            obs=self._obs,
            action=self._action,
            reward=np.asarray(step.reward, np.float32),
            discount=np.asarray(step.discount, np.float32),
            next_obs=step.next_obs,
        )
        self.episode_return += step.reward
        if step.last:
            self.last_episode_return, self.episode_return = self.episode_return, 0.0
            self._obs = self.env.reset()
        else:
            self._obs = step.next_obs
        self.steps += 1
        if self.steps < self.learn_from:
            self.learner = self.fns.collect(self.learner, transition)
        else:
            self.learner, action = self.fns.learn(self.learner, transition, self._obs)
            self._action = np.asarray(action)

    def checkpoint(self, keep_replay: bool) -> tuple[dict[str, Any], dict[str, Any]]:
        """(arrays, host state): what a checkpoint holds of the collector."""
        learner = self.learner if keep_replay else self.learner.replace(replay=None)
        arrays = {"learner": learner, "obs": self._obs, "action": self._action}
        host = {
            "steps": self.steps,
            "learn_from": self.learn_from,
            "episode_return": self.episode_return,
            "last_episode_return": _json_float(self.last_episode_return),
            "warmup_rng": random_state_to_json(self._warmup_rng),
            "env": self.env.get_state(),
            "replay_saved": keep_replay,
        }
        return arrays, host

    def restore(self, arrays: dict[str, Any], host: dict[str, Any]) -> None:
        """Continue from what `checkpoint` returned (the learner's replay may be None)."""
        learner = arrays["learner"]
        if learner.replay is None:
            # Refill the fresh, empty buffer before learning again.
            learner = learner.replace(replay=self.learner.replay)
            self.learn_from = host["steps"] + self.start_timesteps
        else:
            self.learn_from = host["learn_from"]
        self.learner = learner
        self._obs = np.asarray(arrays["obs"], np.float32)
        self._action = np.asarray(arrays["action"], np.float32)
        self.steps = host["steps"]
        self.episode_return = host["episode_return"]
        self.last_episode_return = _from_json_float(host["last_episode_return"])
        random_state_from_json(self._warmup_rng, host["warmup_rng"])
        self.env.set_state(host["env"])


def _json_float(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def _from_json_float(x: float | None) -> float:
    return float("nan") if x is None else float(x)


def train(
    algo: ModuleType,
    algo_config: Any,
    env: HostEnv,
    eval_env: HostEnv,
    config: HostLoopConfig,
    logger: RunLogger,
    control: RunControl | None = None,
) -> TrainResult:
    """Train `algo` on `env` for `config.max_timesteps` steps; evaluate on `eval_env`.

    With `control`, checkpoint (and resume) as it says. Raises NonFiniteError
    when a loss or parameter stops being finite, Interrupted after saving on
    SIGINT/SIGTERM.
    """
    fns = make_step_functions(algo, config.batch_size)
    learner = init_learner(
        algo,
        algo_config,
        env.obs_size,
        env.action_size,
        config.capacity,
        config.batch_size,
        jax.random.key(config.seed),
    )
    collector = Collector(env, fns, learner, config.start_timesteps, config.seed)
    finite = jax.jit(all_finite)
    if control is not None and control.resume:
        evaluations = _resume(control, collector, eval_env, logger)
    else:
        evaluations = [_evaluate_and_log(fns, learner, eval_env, config, logger, step=0)]

    def last_saved() -> int | None:
        return control.last_saved if control is not None else None

    def save(step: int) -> None:
        assert control is not None
        arrays, host = collector.checkpoint(control.keep_replay)
        meta = {"host": host, "eval_env": eval_env.get_state(), "wall_time": logger.wall_time}
        control.save(step, bool(finite(collector.learner.agent)), arrays, meta)

    with StopSignals() if control is not None else contextlib.nullcontext() as signals:
        while collector.steps < config.max_timesteps:
            try:
                collector.step()
            except NonFiniteError as e:
                # Name the loss that went first where there is one, else the action.
                collector.learner, metrics = pull_metrics(collector.learner)
                check_finite(e.step, metrics, True, last_saved())
                raise NonFiniteError(e.step, e.what, last_saved()) from None
            done = collector.steps
            if done % config.log_freq == 0:
                logger.advance_to(done)
                collector.learner, metrics = pull_metrics(collector.learner)
                params_finite = bool(finite(collector.learner.agent))
                check_finite(done, metrics, params_finite, last_saved())
                logger.log_train(done, {**metrics, "episode_return": collector.last_episode_return})
            if done % config.eval_freq == 0 or done == config.max_timesteps:
                evaluations.append(
                    _evaluate_and_log(fns, collector.learner, eval_env, config, logger, done)
                )
            if control is None:
                continue
            received = signals.received if signals is not None else None
            if done % control.every == 0 or done == config.max_timesteps or received:
                save(done)
            if received:
                raise Interrupted(received, done, control.checkpointer.directory)
            control.after_step(done)

    logger.advance_to(collector.steps)
    with (logger.save_dir / "agent.msgpack").open("wb") as f:
        f.write(flax.serialization.to_bytes(collector.learner.agent))
    return TrainResult(collector.learner, evaluations, fns)


def _resume(
    control: RunControl, collector: Collector, eval_env: HostEnv, logger: RunLogger
) -> list[dict[str, float]]:
    """Load the newest checkpoint into `collector` and `eval_env`; continue the logs."""

    def template(meta: dict[str, Any]) -> dict[str, Any]:
        return collector.checkpoint(keep_replay=meta["host"]["replay_saved"])[0]

    arrays, meta = control.load(template)
    collector.restore(arrays, meta["host"])
    eval_env.set_state(meta["eval_env"])
    step = meta["step"]
    if not meta["host"]["replay_saved"]:
        logger.message(
            f"warning: the checkpoint at step {step} holds no replay buffer; refilling "
            f"{collector.start_timesteps} steps before learning again, so this run's data "
            "differ from an uninterrupted one"
        )
    logger.message(f"resumed from the checkpoint at step {step}")
    return logger.resume(step, meta["wall_time"])


def _evaluate_and_log(
    fns: StepFunctions,
    learner: Learner,
    eval_env: HostEnv,
    config: HostLoopConfig,
    logger: RunLogger,
    step: int,
) -> dict[str, float]:
    returns = evaluate(fns.act_deterministic, learner.agent, eval_env, config.eval_episodes)
    return logger.log_evaluation(step, returns)
