"""Device pipeline: acting, Brax physics, replay and updates in one compiled program.

One iteration, for N environments and k updates per iteration:

    act (exploring) -> step N envs -> insert N transitions
    -> sample k batches at once -> lax.scan over k updates

`train_chunk` runs `iterations_per_chunk` iterations with `lax.scan` in one
jitted call that donates the whole carry (learner, replay, environments, key);
the host only loops over chunks to log, show progress, evaluate and save.
Metrics are summed on the device and read once per chunk. The first
`start_timesteps` environment steps take uniform random actions (the
prefill) inside the same program, and evaluation of the deterministic policy
is a jitted rollout on separate environments.

With a `RunControl` the host saves the whole carry (learner, replay buffer,
Brax environment states, keys, counters) and its own evaluation key at chunk
boundaries; a resumed run continues bit for bit as the uninterrupted one.

Counting: an environment step is one step of one environment, so an iteration
adds N environment steps and k updates; the replay ratio is
k * batch_size / N sampled transitions per collected one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import flax.serialization
import flax.struct
import jax
import jax.numpy as jnp

from jax_rl import algos
from jax_rl.core import population
from jax_rl.core import replay as replay_lib
from jax_rl.core.transition import Transition
from jax_rl.envs.brax import BraxEnv, EnvState
from jax_rl.io.checkpoint import all_finite
from jax_rl.io.logger import PopulationLogger, RunLogger
from jax_rl.loops.common import (
    DivergenceWatch,
    Interrupted,
    RunControl,
    StopSignals,
    check_collection,
    check_learner,
    check_positive_ints,
    replay_capacity,
    zero_metrics,
)
from jax_rl.loops.nstep import n_step_transition


@dataclasses.dataclass(frozen=True)
class DeviceLoopConfig:
    """How long to train and how to collect, evaluate and log on the device."""

    # Hands the learner's `act` a draw per environment and episode (`Carry.episode_draw`).
    draws_per_episode = True

    max_timesteps: int = 100_000
    """environment steps in total (all environments together), prefill included"""
    num_envs: int = 16
    """environments stepped in parallel"""
    updates_per_step: int = 16
    """k: gradient updates per iteration (one iteration steps every environment once)"""
    batch_size: int = 256
    """transitions per gradient update"""
    replay_size: int | None = None
    """replay capacity; default min(max_timesteps, 1,000,000)"""
    start_timesteps: int = 5_000
    """environment steps of uniform random actions before learning starts"""
    eval_freq: int = 10_000
    """environment steps between evaluations (one also runs at step 0 and at the end)"""
    eval_episodes: int = 10
    """episodes per evaluation, run in parallel"""
    log_freq: int = 2_000
    """environment steps per chunk: one row of train.csv and one progress update"""
    episode_length: int = 1000
    """time limit of an episode, in steps"""
    seed: int = 0
    """seed of the learner, the environments and the evaluation"""
    n_step: int = 1
    """steps of reward summed per stored transition (n-step returns; 1: one-step TD)"""

    def __post_init__(self) -> None:
        check_positive_ints(
            self,
            (
                "max_timesteps",
                "num_envs",
                "updates_per_step",
                "batch_size",
                "start_timesteps",
                "eval_freq",
                "eval_episodes",
                "log_freq",
                "episode_length",
                "n_step",
            ),
        )
        check_collection(self)
        if self.num_envs > self.capacity:
            raise ValueError(
                f"num_envs ({self.num_envs}) exceeds the replay capacity ({self.capacity})"
            )

    @property
    def capacity(self) -> int:
        return replay_capacity(self.max_timesteps, self.replay_size)

    @property
    def iterations_per_chunk(self) -> int:
        return max(1, self.log_freq // self.num_envs)

    @property
    def chunk_steps(self) -> int:
        """Environment steps per chunk."""
        return self.iterations_per_chunk * self.num_envs

    @property
    def num_chunks(self) -> int:
        """The run is rounded up to whole chunks."""
        return math.ceil(self.max_timesteps / self.chunk_steps)

    @property
    def total_steps(self) -> int:
        return self.num_chunks * self.chunk_steps


class Carry(flax.struct.PyTreeNode):
    """Everything a chunk carries and donates."""

    agent: Any
    replay: replay_lib.ReplayState
    env: EnvState
    key: jax.Array
    metric_sums: dict[str, jax.Array]  # summed since the last read
    num_updates: jax.Array  # updates since the last read
    env_steps: jax.Array  # int32 totals since the start of the run
    updates: jax.Array
    finished_returns: jax.Array  # sum and count of finished training episodes'
    finished_episodes: jax.Array  # returns since the last read
    # [N] uniform in [0, 1), drawn for each environment when its episode starts and
    # handed to the learner's `act` (TD3's per-environment exploration std uses it)
    episode_draw: jax.Array
    # n-step returns: the last n - 1 steps of every environment, not yet stored
    # (Transition [n - 1, N, ...] and their episode ends [n - 1, N]); None for n = 1.
    pending: tuple[Transition, jax.Array] | None = None


@dataclasses.dataclass(frozen=True)
class Pipeline:
    """The jitted programs of the device loop for one learner and one environment.

    Both work on a population of P agents (P = 1 for an ordinary run): a
    carry built by `init_population`, whose per-agent leaves have a leading
    [P] axis (see `carry_axes`). `evaluate(agents, keys [P], uniform)` returns
    returns [P, eval_episodes].
    """

    train_chunk: Callable[[Carry], Carry]
    evaluate: Callable[[Any, jax.Array, jax.Array], jax.Array]


def carry_axes(carry: Carry) -> Carry:
    """vmap axes of a population carry: None for the counters every agent advances in
    lock step (replay position/size, update and step counts), 0 for the rest."""
    axes = population.batched_fields(carry, shared=("num_updates", "env_steps", "updates"))
    return axes.replace(
        agent=population.agent_axes(carry.agent), replay=population.replay_axes(carry.replay)
    )


def _carry_keys(key: jax.Array) -> jax.Array:
    """An agent's key -> its learner's, its environments', its episode draws' and its
    carry's keys."""
    return jax.random.split(key, 4)


def reset_envs(env: BraxEnv, num_envs: int, key: jax.Array) -> EnvState:
    """One agent's N environments in random initial states (the carry's `env`)."""
    return env.reset(_carry_keys(key)[1], num_envs)


@functools.lru_cache(maxsize=8)
def _reset_program(env: BraxEnv, num_envs: int, size: int) -> Callable[[jax.Array], EnvState]:
    """The jitted reset of a population's environments, keys [P] -> states [P, N, ...].

    A program of its own, not part of the learner's initialisation: the physics' reset is
    most of that program's compile time, and this one is the same for every learner and
    setting on the environment (compiled once per process and environment object, and
    loaded from the persistent compilation cache by the next process).
    """

    def reset_population(keys: jax.Array) -> EnvState:
        reset = functools.partial(reset_envs, env, num_envs)
        return population.over_agents(reset, (0,), 0, size)(keys)

    return jax.jit(reset_population)


def init_carry(
    algo: ModuleType,
    algo_config: Any,
    env: BraxEnv,
    config: DeviceLoopConfig,
    key: jax.Array,
    env_state: EnvState,
) -> Carry:
    """One agent: a fresh learner, an empty buffer and its N environments `env_state`
    (`reset_envs` with the same key). (The loop works on populations: see
    `init_population`.)"""
    spec = replay_lib.ReplaySpec(
        config.capacity,
        env.obs_size,
        env.action_size,
        prioritized=algos.prioritized(algo, algo_config),
    )
    replay = replay_lib.create(spec)
    agent_key, _, draw_key, key = _carry_keys(key)
    agent = algo.init(agent_key, env.obs_size, env.action_size, algo_config, config.num_envs)
    sums = zero_metrics(algo, agent, replay_lib.sample(replay, key, config.batch_size), key)
    pending = None
    if config.n_step > 1:
        slots = (config.n_step - 1, config.num_envs)
        steps = jax.tree_util.tree_map(
            lambda x: jnp.zeros(slots + x.shape[1:], jnp.float32), replay.data
        )
        pending = (steps, jnp.zeros(slots, bool))
    return Carry(
        agent=agent,
        replay=replay,
        pending=pending,
        env=env_state,
        key=key,
        metric_sums=sums,
        num_updates=jnp.int32(0),
        env_steps=jnp.int32(0),
        updates=jnp.int32(0),
        finished_returns=jnp.float32(0.0),
        finished_episodes=jnp.int32(0),
        episode_draw=jax.random.uniform(draw_key, (config.num_envs,)),
    )


def agent_keys(seeds: Sequence[int]) -> tuple[jax.Array, jax.Array]:
    """(training keys [P], evaluation keys [P]): agent i's come from jax.random.key(seeds[i])
    alone, so an agent trains exactly as a run of its own with that seed would."""
    pairs = [jax.random.split(jax.random.key(seed)) for seed in seeds]
    return jnp.stack([p[0] for p in pairs]), jnp.stack([p[1] for p in pairs])


def init_population(
    algo: ModuleType,
    algo_configs: Sequence[Any],
    env: BraxEnv,
    config: DeviceLoopConfig,
    keys: jax.Array,
) -> Carry:
    """P agents, agent i with `algo_configs[i]` (equal but for traced fields) and `keys[i]`."""
    if len(algo_configs) != len(keys):
        raise ValueError(f"{len(algo_configs)} configs for {len(keys)} keys")
    configs = population.stack(algo_configs)

    env_states = _reset_program(env, config.num_envs, len(keys))(keys)

    def one(algo_config: Any, key: jax.Array, env_state: EnvState) -> Carry:
        return init_carry(algo, algo_config, env, config, key, env_state)

    one_env = jax.tree_util.tree_map(
        lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype), env_states
    )
    axes = carry_axes(jax.eval_shape(one, algo_configs[0], keys[0], one_env))
    # Jitted, like the host loop's: eagerly, each operation would compile on its own.
    init = population.over_agents(one, (0, 0, 0), axes, len(keys))
    carry = jax.jit(init, compiler_options=algos.init_compiler_options())(configs, keys, env_states)
    # Brax's reset may hand back one array under several names; the chunks donate
    # the carry, and XLA refuses to donate one buffer twice.
    return jax.tree_util.tree_map(jnp.copy, carry)


def _collect(
    algo: ModuleType, carry: Carry, env: BraxEnv, action: jax.Array, draw_key: jax.Array
) -> Carry:
    """Step every environment with `action`, store the transitions, count episodes; let
    the learner observe the transitions (statistics); draw anew for episodes that start.

    With n-step returns, store instead the n-step transitions of the steps made
    n - 1 iterations ago (`jax_rl.loops.nstep`), once there are any.
    """
    env_state, transition, info = env.step(carry.env, action)
    agent = algo.observe(carry.agent, transition)
    fresh = jax.random.uniform(draw_key, carry.episode_draw.shape)
    episode_draw = jnp.where(info.done, fresh, carry.episode_draw)
    pending = carry.pending
    if pending is None:
        replay = replay_lib.insert(carry.replay, transition)
    else:
        steps, lasts = pending
        slots = lasts.shape[0]
        window = [jax.tree_util.tree_map(lambda x: x[i], steps) for i in range(slots)]
        stored = n_step_transition(
            [*window, transition], [*lasts, info.done], carry.agent.config.discount, xp=jnp
        )
        written = replay_lib.insert(carry.replay, stored)
        # The first n - 1 iterations have nothing to store: their rows are written
        # and then overwritten, as position and size stay (no branch on the buffer).
        full = carry.env_steps >= slots * action.shape[0]
        replay = written.replace(
            position=jnp.where(full, written.position, carry.replay.position),
            size=jnp.where(full, written.size, carry.replay.size),
        )
        pending = (
            jax.tree_util.tree_map(
                lambda p, x: jnp.concatenate([p[1:], x[None]]), steps, transition
            ),
            jnp.concatenate([lasts[1:], info.done[None]]),
        )
    return carry.replace(
        agent=agent,
        episode_draw=episode_draw,
        env=env_state,
        replay=replay,
        pending=pending,
        env_steps=carry.env_steps + action.shape[0],
        finished_returns=carry.finished_returns + info.episode_return.sum(),
        finished_episodes=carry.finished_episodes + info.done.sum(dtype=jnp.int32),
    )


def _update_k_times(
    algo: ModuleType, carry: Carry, key: jax.Array, k: int, batch_size: int
) -> Carry:
    """Sample k batches with one draw, then scan k updates over them. With prioritised
    replay the k batches are drawn by the priorities before the first update, and the
    priorities the updates return are written back after the last (a row drawn twice
    keeps one of its new values).

    A learner's fade of the priorities (DR.Q's, `algos.fade`) counts a row's age in rows
    written since, as the host loop does; here one iteration writes N rows (one per
    environment), so the rows of one step have ages 0 to N - 1, and a row ages by N per
    iteration where DR.Q's one environment ages it by 1 per step."""
    sample_key, update_key = jax.random.split(key)
    fade = algos.fade(algo, carry.agent.config)
    flat, rows = replay_lib.sample_indexed(carry.replay, sample_key, k * batch_size, fade)
    batches = jax.tree_util.tree_map(lambda x: x.reshape((k, batch_size) + x.shape[1:]), flat)

    def one_update(agent: Any, inputs: tuple[Any, jax.Array]) -> tuple[Any, tuple]:
        batch, key = inputs
        agent, metrics = algo.update(agent, batch, key)
        return agent, replay_lib.split_priorities(metrics)

    agent, (metrics, priority) = jax.lax.scan(
        one_update, carry.agent, (batches, jax.random.split(update_key, k))
    )
    replay = carry.replay
    if priority is not None:
        replay = replay_lib.write_priorities(replay, rows, priority.reshape(-1))
    sums = jax.tree_util.tree_map(lambda s, m: s + m.sum(0), carry.metric_sums, metrics)
    return carry.replace(
        agent=agent,
        replay=replay,
        metric_sums=sums,
        num_updates=carry.num_updates + k,
        updates=carry.updates + k,
    )


def rollout_returns(
    env: BraxEnv,
    config: DeviceLoopConfig,
    policy: Callable[[jax.Array, jax.Array], jax.Array],
    key: jax.Array,
) -> jax.Array:
    """Returns [eval_episodes] of one episode per environment under `policy(obs, key)`.

    Each episode counts rewards until its first end (terminal or time limit).
    """
    reset_key, key = jax.random.split(key)
    state = env.reset(reset_key, config.eval_episodes)
    alive = jnp.ones(config.eval_episodes, bool)
    returns = jnp.zeros(config.eval_episodes, jnp.float32)

    def step(inputs: tuple, step_key: jax.Array) -> tuple[tuple, None]:
        state, alive, returns = inputs
        state, transition, info = env.step(state, policy(state.obs, step_key), reset_finished=False)
        returns = returns + jnp.where(alive, transition.reward, 0.0)
        return (state, alive & ~info.done, returns), None

    keys = jax.random.split(key, config.episode_length)
    (_, _, returns), _ = jax.lax.scan(step, (state, alive, returns), keys)
    return returns


@functools.lru_cache(maxsize=8)
def make_pipeline(algo: ModuleType, env: BraxEnv, config: DeviceLoopConfig) -> Pipeline:
    """Build and jit the training chunk and the evaluation rollout.

    Cached per (learner, environment object, loop config): training again in
    the same process (a resumed run, a new seed, new learning rates, which
    are traced values) reuses the compiled programs.

    The warm-up is part of the chunk: while the buffer holds fewer than
    `start_timesteps` transitions the actions are uniform random, and updates
    start once it holds that many (a run resumed without its buffer thus
    refills it first). One program serves the whole run (Brax physics is slow
    to compile).
    """
    k, batch_size = config.updates_per_step, config.batch_size
    prefill = min(config.start_timesteps, config.capacity)

    def train_iteration(carry: Carry, _: None) -> tuple[Carry, None]:
        key, act_key, uniform_key, draw_key, update_key = jax.random.split(carry.key, 5)
        # The per-episode draw reaches only a learner that explores with it (TD3's).
        draw = {"episode_draw": carry.episode_draw} if algos.draws_per_episode(algo) else {}
        explore = algo.act(carry.agent, carry.env.obs, act_key, deterministic=False, **draw)
        uniform = jax.random.uniform(uniform_key, explore.shape, minval=-1.0, maxval=1.0)
        action = jnp.where(carry.replay.size < prefill, uniform, explore)
        carry = _collect(algo, carry.replace(key=key), env, action, draw_key)
        carry = jax.lax.cond(
            carry.replay.size >= prefill,
            lambda c: _update_k_times(algo, c, update_key, k, batch_size),
            lambda c: c,
            carry,
        )
        return carry, None

    def train_chunk(carry: Carry) -> Carry:
        carry, _ = jax.lax.scan(train_iteration, carry, None, config.iterations_per_chunk)
        return carry

    def evaluate(agent: Any, key: jax.Array, uniform: jax.Array) -> jax.Array:
        """Undiscounted returns [eval_episodes] of the deterministic policy, or with
        `uniform` of uniform random actions (the baseline a learner must beat)."""

        def policy(obs: jax.Array, step_key: jax.Array) -> jax.Array:
            greedy = algo.act(agent, obs, step_key, deterministic=True)
            random = jax.random.uniform(step_key, greedy.shape, minval=-1.0, maxval=1.0)
            return jnp.where(uniform, random, greedy)

        return rollout_returns(env, config, policy, key)

    def population_chunk(carry: Carry) -> Carry:
        axes = carry_axes(carry)
        return population.over_agents(train_chunk, (axes,), axes, carry.key.shape[0])(carry)

    def population_evaluate(agents: Any, keys: jax.Array, uniform: jax.Array) -> jax.Array:
        in_axes = (population.agent_axes(agents), 0, None)
        return population.over_agents(evaluate, in_axes, 0, keys.shape[0])(agents, keys, uniform)

    return Pipeline(
        train_chunk=jax.jit(population_chunk, donate_argnums=0),
        evaluate=jax.jit(population_evaluate),
    )


@dataclasses.dataclass
class TrainResult:
    carry: Carry  # the population carry (leading [P] axis on per-agent leaves)
    evaluations: list[list[dict[str, float]]]  # per agent, one row per evaluation
    pipeline: Pipeline

    def agent(self, i: int = 0) -> Carry:
        """Agent i's own carry (no population axis)."""
        return population.index_agent(self.carry, carry_axes(self.carry), i)


def _read_chunk(carry: Carry, batch_size: int) -> tuple[Carry, list[dict[str, float]]]:
    """The one device-to-host read of a chunk: per agent, averaged metrics, counters and
    episode returns.

    Returns the carry with the per-chunk sums reset.
    """
    sums, count, total_return, episodes, updates, env_steps = jax.device_get(
        (
            carry.metric_sums,
            carry.num_updates,
            carry.finished_returns,
            carry.finished_episodes,
            carry.updates,
            carry.env_steps,
        )
    )
    rows = []
    for i in range(len(total_return)):
        row = {k: float(v[i]) / max(int(count), 1) for k, v in sums.items()}
        row["updates"] = int(updates)
        row["replay_ratio"] = int(updates) * batch_size / max(int(env_steps), 1)
        row["episode_return"] = (
            float(total_return[i]) / int(episodes[i]) if episodes[i] else float("nan")
        )
        rows.append(row)
    carry = carry.replace(
        metric_sums=jax.tree_util.tree_map(jnp.zeros_like, carry.metric_sums),
        num_updates=jnp.zeros_like(carry.num_updates),
        finished_returns=jnp.zeros_like(carry.finished_returns),
        finished_episodes=jnp.zeros_like(carry.finished_episodes),
    )
    return carry, rows


def _place(carry: Carry, config: DeviceLoopConfig, logger: PopulationLogger) -> Carry:
    """Lay the population out over the local devices (see `population.placement`)."""
    num_agents, num_devices = int(carry.key.shape[0]), len(jax.local_devices())
    spread = population.placement(num_agents, config.num_envs, num_devices)
    if spread == "one":
        if num_devices > 1:
            logger.message(
                f"note: {num_agents} agent(s) x {config.num_envs} envs do not divide over "
                f"{num_devices} devices; running on one device"
            )
        return carry
    the_mesh = population.mesh()
    assert the_mesh is not None
    if spread == "agents":
        logger.message(f"{num_agents} agents split over {num_devices} devices")
        return population.shard_agents(carry, carry_axes(carry), the_mesh)
    logger.message(f"{config.num_envs} environments split over {num_devices} devices")
    placed = population.replicate(carry, the_mesh)
    return placed.replace(env=population.split_envs(placed.env, the_mesh))


def train(
    algo: ModuleType,
    algo_config: Any,
    env: BraxEnv,
    config: DeviceLoopConfig,
    logger: RunLogger,
    control: RunControl | None = None,
) -> TrainResult:
    """Train one agent (seed `config.seed`) on N Brax environments; see `train_population`."""
    return train_population(
        algo, [algo_config], [config.seed], env, config, PopulationLogger([logger]), control
    )


def train_population(
    algo: ModuleType,
    algo_configs: Sequence[Any],
    seeds: Sequence[int],
    env: BraxEnv,
    config: DeviceLoopConfig,
    logger: PopulationLogger,
    control: RunControl | None = None,
    recorder: Any = None,
) -> TrainResult:
    """Train P agents (agent i: `algo_configs[i]`, `seeds[i]`) together, each on its own N
    Brax environments; evaluate every `eval_freq` environment steps. (`config.seed` is not
    used: the seeds are the agents'.)

    Agent i trains exactly as a run of its own with seed `seeds[i]` (to float
    tolerance: vmapped matrix products may round differently). With
    `control`, checkpoint (and resume) the whole population at chunk
    boundaries. A non-finite loss or parameter stops a one-agent run
    (NonFiniteError); in a population the agent is reported and the others go
    on, until none is left. Interrupted after saving on SIGINT/SIGTERM. With `recorder`
    (`play.VideoRecorder`, --video_every), record videos of the agents at its steps.
    """
    check_learner(algo, algo_configs[0], None)
    run = _PopulationRun.start(algo, algo_configs, seeds, env, config, logger, control)
    with StopSignals() if control is not None else contextlib.nullcontext() as signals:
        for chunk in range(run.first_chunk, config.num_chunks):
            run.carry = run.pipeline.train_chunk(run.carry)
            env_steps = (chunk + 1) * config.chunk_steps
            params_ok = run.read_chunk(env_steps)
            last_chunk = chunk == config.num_chunks - 1
            run.maybe_evaluate(env_steps, last_chunk)
            if recorder is not None and recorder.due(
                env_steps - config.chunk_steps, env_steps, last_chunk
            ):
                recorder.record(env_steps, run.agent, skip=run.watch.diverged)
            run.checkpoint(env_steps, params_ok, last_chunk, signals)
    return run.finish()


@dataclasses.dataclass
class _PopulationRun:
    """The state of one `train_population` call and its steps: set-up (`start`: the
    carry, a resumed checkpoint, the first evaluation), the body of every chunk
    (`read_chunk`, `maybe_evaluate`, `checkpoint`) and the end (`finish`)."""

    config: DeviceLoopConfig
    logger: PopulationLogger
    control: RunControl | None
    pipeline: Pipeline
    carry: Carry
    axes: Carry
    eval_keys: jax.Array
    finite: Callable[[Any], jax.Array]
    watch: DivergenceWatch
    evaluations: list[list[dict[str, float]]] = dataclasses.field(default_factory=list)
    first_chunk: int = 0
    next_eval: int = 0
    next_save: int = 0
    last_read: float = 0.0
    last_updates: int = 0

    @classmethod
    def start(
        cls,
        algo: ModuleType,
        algo_configs: Sequence[Any],
        seeds: Sequence[int],
        env: BraxEnv,
        config: DeviceLoopConfig,
        logger: PopulationLogger,
        control: RunControl | None,
    ) -> _PopulationRun:
        """Build the pipeline and the population (or load the checkpoint), place it on the
        devices, and evaluate at step 0 (a fresh run)."""
        pipeline = make_pipeline(algo, env, config)
        keys, eval_keys = agent_keys(seeds)
        carry = init_population(algo, algo_configs, env, config, keys)
        axes = carry_axes(carry)
        finite = jax.jit(population.over_agents(all_finite, (axes.agent,), 0, len(seeds)))
        watch = DivergenceWatch(seeds, logger.message)
        run = cls(config, logger, control, pipeline, carry, axes, eval_keys, finite, watch)
        run.next_eval = config.eval_freq
        resumed = control is not None and control.resume
        if resumed:
            assert control is not None
            run.carry, run.eval_keys, run.next_eval, run.evaluations = _resume(
                control, run.carry, run.eval_keys, logger
            )
            run.first_chunk = int(run.carry.env_steps) // config.chunk_steps
        run.carry = _place(run.carry, config, logger)
        if not resumed:
            run.evaluations = [[row] for row in run.evaluate(0)]
        if control is not None:
            run.next_save = (run.first_chunk * config.chunk_steps // control.every + 1) * (
                control.every
            )
        run.last_read, run.last_updates = time.perf_counter(), int(run.carry.updates)
        return run

    def agent(self, i: int) -> Any:
        """Agent i's learner state (no population axis)."""
        return population.index_agent(self.carry.agent, self.axes.agent, i)

    def evaluate(self, step: int) -> list[dict[str, float]]:
        """Every agent's evaluation episodes at `step`, logged (fresh keys each time)."""
        pairs = jax.vmap(jax.random.split)(self.eval_keys)
        self.eval_keys, now = pairs[:, 0], pairs[:, 1]
        returns = self.pipeline.evaluate(self.carry.agent, now, jnp.bool_(False))
        rows = [[float(r) for r in row] for row in jax.device_get(returns)]
        return self.logger.log_evaluation(step, rows)

    def read_chunk(self, env_steps: int) -> list[bool]:
        """Pull the chunk's metrics, check them, log them and the rates; which agents'
        parameters are finite."""
        self.carry, rows = _read_chunk(self.carry, self.config.batch_size)
        now = time.perf_counter()
        params_ok = [bool(v) for v in jax.device_get(self.finite(self.carry.agent))]
        last_saved = self.control.last_saved if self.control else None
        self.watch.check(env_steps, rows, params_ok, last_saved)
        updates, num_agents, elapsed = rows[0]["updates"], len(rows), now - self.last_read
        self.logger.set_status(
            env_steps_per_s=f"{num_agents * self.config.chunk_steps / elapsed:.0f}",
            updates_per_s=f"{num_agents * (updates - self.last_updates) / elapsed:.0f}",
        )
        self.last_read, self.last_updates = now, int(updates)
        self.logger.advance_to(env_steps)
        self.logger.log_train(env_steps, rows)
        return params_ok

    def maybe_evaluate(self, env_steps: int, last_chunk: bool) -> None:
        """Evaluate once `eval_freq` steps have passed since the last time, and at the end."""
        if env_steps >= self.next_eval or last_chunk:
            for kept, row in zip(self.evaluations, self.evaluate(env_steps), strict=True):
                kept.append(row)
            while self.next_eval <= env_steps:
                self.next_eval += self.config.eval_freq

    def checkpoint(
        self, env_steps: int, params_ok: list[bool], last_chunk: bool, signals: Any
    ) -> None:
        """Save at checkpoint points, at the end and on a signal (then stop)."""
        control = self.control
        if control is None:
            return
        received = signals.received if signals is not None else None
        if env_steps >= self.next_save or last_chunk or received:
            stored = self.carry if control.keep_replay else self.carry.replace(replay=None)
            meta = {
                "next_eval": self.next_eval,
                "wall_time": self.logger.wall_time,
                "replay_saved": control.keep_replay,
            }
            tree = {"carry": stored, "eval_key": self.eval_keys}
            # A population keeps saving while one of its agents is still finite.
            control.save(env_steps, any(params_ok), tree, meta)
            while self.next_save <= env_steps:
                self.next_save += control.every
        if received:
            raise Interrupted(received, env_steps, control.checkpointer.directory)
        control.after_step(env_steps)

    def finish(self) -> TrainResult:
        """Write each agent's final parameters (agent.msgpack) beside its logs."""
        for i, agent_logger in enumerate(self.logger.agents):
            agent = self.agent(i)
            with (agent_logger.save_dir / "agent.msgpack").open("wb") as f:
                f.write(flax.serialization.to_bytes(agent))
        return TrainResult(self.carry, self.evaluations, self.pipeline)


def _resume(
    control: RunControl, carry: Carry, eval_keys: jax.Array, logger: PopulationLogger
) -> tuple[Carry, jax.Array, int, list[list[dict[str, float]]]]:
    """The newest checkpoint's carry, evaluation keys and next evaluation step; the logs
    continued from there."""
    restored, meta = control.load(
        lambda meta: {
            "carry": carry if meta["replay_saved"] else carry.replace(replay=None),
            "eval_key": eval_keys,
        }
    )
    fresh_replay = carry.replay
    carry, eval_keys = restored["carry"], restored["eval_key"]
    step = meta["step"]
    if not meta["replay_saved"]:
        carry = carry.replace(replay=fresh_replay)
        logger.message(
            f"warning: the checkpoint at step {step} holds no replay buffer; refilling it "
            "with uniform random steps before learning again, so this run's data differ "
            "from an uninterrupted one"
        )
    logger.message(f"resumed from the checkpoint at step {step}")
    return carry, eval_keys, meta["next_eval"], logger.resume(step, meta["wall_time"])
