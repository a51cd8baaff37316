"""Host loop: Python steps the environment, one jitted call per step learns.

Per environment step there is exactly one jitted, donated call:
- during the warm-up (`start_timesteps` uniform random actions) `collect`
  inserts the transition;
- afterwards `learn` inserts the transition, samples a batch, does one
  update and returns the next exploration action (sampled, or noised for
  TD3: the agent explores while collecting, DESIGN.md pitfall 1). With
  `updates_per_step` U > 1 it samples and updates U times in that one call,
  each batch drawn with the agent's next key, and acts after the last.

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

Populations: the loop always trains P agents (P = 1 for an ordinary run),
each with its own environment, evaluation environment, seed, warm-up actions,
parameters and replay buffer. Every step moves the P environments once on the
host and makes one jitted call for all agents, vmapped over them (with one
agent, the plain function). Agent i collects and learns exactly as a run of
its own with its seed would.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import flax.serialization
import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

from jax_rl import algos
from jax_rl.core import population
from jax_rl.core import replay as replay_lib
from jax_rl.core.noise import ColoredNoise
from jax_rl.core.random_state import random_state_from_json, random_state_to_json
from jax_rl.core.transition import Array, Transition
from jax_rl.envs import HostEnv
from jax_rl.io.checkpoint import all_finite
from jax_rl.io.logger import PopulationLogger, RunLogger
from jax_rl.loops.common import (
    DivergenceWatch,
    Interrupted,
    NonFiniteError,
    RunControl,
    StopSignals,
    check_collection,
    check_finite,
    check_learner,
    check_positive_ints,
    pull_metrics,
    replay_capacity,
    zero_metrics,
)
from jax_rl.loops.nstep import NStepQueue

POPULATION_LOOPS = ("auto", *population.LOOPS)


def resolve_population_loop(loop: str, algo_config: Any, num_agents: int) -> str:
    """ "vmap" or "map" for `loop` ("auto": "map" for a population whose networks have
    BatchRenorm layers (crossq) on a CPU, else "vmap").

    Why: on a CPU a vmapped population's per-layer activations are P times one agent's,
    and CrossQ's critics run a 2B-row batch through BatchRenorm after every layer, so
    their elementwise passes leave the cache. Measured on this 2-core AMD EPYC, TD3's CrossQ
    entry, the jitted step alone, seconds per 1000 steps: one agent 5.4, 3 agents
    vmapped 26.0 (4.8x), mapped 17.0 (3.1x); pinned to one core 8.8, 46.5 (5.3x) and
    29.1 (3.3x). Plain TD3 (no BatchRenorm) the other way: one core 5.6, 3 agents
    vmapped 16.8 (3.0x), mapped 19.8 (3.5x: slicing each agent's state in and out).
    On an accelerator a vmapped population fills the device and stays the choice."""
    if loop != "auto":
        return loop
    renorm = bool(getattr(algo_config, "crossq", False))
    on_cpu = jax.default_backend() == "cpu"
    return "map" if num_agents > 1 and renorm and on_cpu else "vmap"


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
    n_step: int = 1
    """steps of reward summed per stored transition (n-step returns; 1: one-step TD)"""
    noise_color: float = 0.0
    """exponent beta of the exploration noise's 1 / f^beta spectrum: 0 white (the
    published algorithms), 1 pink, 2 red (`jax_rl.core.noise`)"""
    action_repeat: int = 1
    """frames each decision is held for, rewards summed (`jax_rl.envs.repeat`; the
    trainer wraps the environments): every step count here is in frames"""
    updates_per_step: int = 1
    """gradient updates per decision after the warm-up, each on a batch of its own (the
    update-to-data ratio; with action_repeat K: per K frames)"""
    population_loop: str = "auto"
    """how a population's updates run: "vmap" (one batched program), "map" (one agent
    after another in the same program) or "auto" (`resolve_population_loop`)"""

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
                "n_step",
                "action_repeat",
                "updates_per_step",
            ),
        )
        check_collection(self)
        if self.population_loop not in POPULATION_LOOPS:
            raise ValueError(
                f"population_loop must be one of {', '.join(POPULATION_LOOPS)}, "
                f"got {self.population_loop!r}"
            )
        if not np.isfinite(self.noise_color) or self.noise_color < 0:
            raise ValueError(f"noise_color must be a finite number >= 0, got {self.noise_color}")
        stored, repeat = self.batch_size + self.n_step - 1, self.action_repeat
        if self.start_timesteps < stored * repeat:
            least = f"({stored})" if repeat == 1 else f"times action_repeat ({stored * repeat})"
            raise ValueError(
                f"start_timesteps ({self.start_timesteps}) must be at least batch_size + "
                f"n_step - 1 {least}: transitions are stored n_step - 1 decisions late and "
                "the first update samples a full batch"
            )

    @property
    def capacity(self) -> int:
        return replay_capacity(self.max_timesteps, self.replay_size)

    @property
    def total_steps(self) -> int:
        """Environment steps per agent (the device loop rounds to whole chunks; this one
        runs exactly max_timesteps)."""
        return self.max_timesteps


class Learner(flax.struct.PyTreeNode):
    """Everything the per-step call carries (and donates) from step to step.

    The loop works on populations: per-agent leaves have a leading [P] axis
    (P = 1 for an ordinary run), see `learner_axes`. `init_learner` builds one
    agent's, `init_population` a population's.
    """

    agent: Any
    replay: replay_lib.ReplayState
    key: jax.Array
    metric_sums: dict[str, jax.Array]  # summed since the last log row
    num_updates: jax.Array  # updates since the last log row


def learner_axes(learner: Learner) -> Learner:
    """vmap axes of a population learner: None for what every agent advances in lock step
    (replay position and size, update counts), 0 for the rest."""
    axes = population.batched_fields(learner, shared=("num_updates",))
    return axes.replace(
        agent=population.agent_axes(learner.agent), replay=population.replay_axes(learner.replay)
    )


@dataclasses.dataclass(frozen=True)
class StepFunctions:
    """The jitted calls of the loop; `collect` and `learn` donate the learner.

    `collect` and `learn` take a population learner and one transition per
    agent ([P, ...]); `learn` returns the next exploration action of every agent
    [P, A], its noise drawn from the learner's key, or given ([P, A] standard
    normal, colored noise) as its last argument. `act_deterministic` acts for
    one agent (no population axis).
    """

    collect: Callable[[Learner, Transition], Learner]
    learn: Callable[[Learner, Transition, Array, Array | None], tuple[Learner, jax.Array]]
    act_deterministic: Callable[[Any, Array], jax.Array]


def make_step_functions(
    algo: ModuleType, batch_size: int, updates_per_step: int = 1, population_loop: str = "vmap"
) -> StepFunctions:
    """Build the loop's jitted calls for learner module `algo` (`learn` makes
    `updates_per_step` updates; a population's updates vmapped or, `population_loop`
    "map", one agent after another: `resolve_population_loop`)."""

    def draw(
        key: jax.Array,
        size: jax.Array,
        priority: jax.Array | None,
        position: jax.Array,
        fade: replay_lib.Fade | None,
    ) -> tuple[jax.Array, jax.Array]:
        """One agent's keys for this step ([next, update, act]) and its batch's rows
        (drawn by `priority` [capacity] with prioritised replay, faded by each row's age
        with a `fade`, else uniformly)."""
        key, sample_key, update_key, act_key = jax.random.split(key, 4)
        rows = replay_lib.sample_rows(sample_key, size, batch_size, priority, fade, position)
        return jnp.stack([key, update_key, act_key]), rows

    def learn_one(
        learner: Learner,
        keys: jax.Array,
        batch: Transition,
        act_obs: jax.Array,
        act_noise: jax.Array | None,
    ) -> tuple[Learner, jax.Array, jax.Array | None]:
        """One agent's update and next action; also the new priorities of its batch's rows
        (prioritised replay; else None)."""
        key, update_key, act_key = keys
        agent, metrics = algo.update(learner.agent, batch, update_key)
        metrics, priority = replay_lib.split_priorities(metrics)
        noise = None if act_noise is None else act_noise[None]
        action = algo.act(agent, act_obs[None], act_key, deterministic=False, noise=noise)[0]
        sums = jax.tree_util.tree_map(jnp.add, learner.metric_sums, metrics)
        return (
            learner.replace(
                agent=agent, key=key, metric_sums=sums, num_updates=learner.num_updates + 1
            ),
            action,
            priority,
        )

    def observe(learner: Learner, transitions: Transition) -> Learner:
        """Each agent's learner observes its stored transition (one environment each)."""
        axes, size = population.agent_axes(learner.agent), transitions.obs.shape[0]
        over = population.over_agents(algo.observe, (axes, 0), axes, size)
        one_env = jax.tree_util.tree_map(lambda x: x[:, None], transitions)
        return learner.replace(agent=over(learner.agent, one_env))

    # The population versions: vmapped over the agents (indexed where there is one).
    def collect(learner: Learner, transitions: Transition) -> Learner:
        learner = observe(learner, transitions)
        return learner.replace(replay=replay_lib.insert_population(learner.replay, transitions))

    def learn(
        learner: Learner,
        transitions: Transition,
        act_obs: jax.Array,
        act_noise: jax.Array | None = None,
    ) -> tuple[Learner, jax.Array]:
        learner = observe(learner, transitions)
        replay = replay_lib.insert_population(learner.replay, transitions)
        rest = learner.replace(replay=None)
        axes, size = learner_axes(rest), act_obs.shape[0]
        priority_axis = None if replay.priority is None else 0
        over = population.over_agents(
            learn_one, (axes, 0, 0, 0, 0), (axes, 0, 0), size, population_loop
        )
        # Windows of consecutive rows from each start for a learner that asks (MR.Q's),
        # drawn by faded priorities for one that asks (DR.Q's; static, like the horizon).
        # One row per agent and step: a row's age counts the steps since it was stored.
        horizon = algos.horizon(algo, rest.agent.config)
        draw_faded = functools.partial(draw, fade=algos.fade(algo, rest.agent.config))
        if population_loop == "map" and size > 1 and replay.priority is None:
            rest, actions = learn_mapped(
                rest, replay, axes, act_obs, act_noise, horizon, draw_faded
            )
            return rest.replace(replay=replay), actions
        # Unrolled: U is small, and each update reads the priorities the last wrote back.
        # The actions of all but the last update are never read (XLA drops them).
        for _ in range(updates_per_step):
            keys, rows = population.over_agents(
                draw_faded, (0, None, priority_axis, None), (0, 0), size
            )(rest.key, replay.size, replay.priority, replay.position)
            batch = (
                replay_lib.gather_population(replay.data, rows)
                if horizon == 1
                else replay_lib.gather_window_population(replay, rows, horizon)
            )
            rest, actions, priority = over(rest, keys, batch, act_obs, act_noise)
            if priority is not None:
                replay = replay_lib.write_priorities_population(replay, rows, priority)
        return rest.replace(replay=replay), actions

    def learn_mapped(
        rest: Learner,
        replay: replay_lib.ReplayState,
        axes: Any,
        act_obs: jax.Array,
        act_noise: jax.Array | None,
        horizon: int,
        draw_faded: Callable[..., tuple[jax.Array, jax.Array]],
    ) -> tuple[Learner, jax.Array]:
        """`learn`'s U updates of a mapped population with uniform replay, all of an agent's
        in one body of one map over the agents: each agent's state is sliced out of the
        population and written back once per step, not once per update (about 6 MB each
        way for R13's SAC). The U batches are drawn first, with the keys the updates
        would draw them with (uniform draws read no priority an update writes), so every
        agent's updates are the ones the update-by-update loop makes."""
        size = act_obs.shape[0]
        keys, rows, key = [], [], rest.key
        for _ in range(updates_per_step):
            k, r = population.over_agents(draw_faded, (0, None, None, None), (0, 0), size)(
                key, replay.size, None, replay.position
            )
            keys.append(k)
            rows.append(r)
            key = k[:, 0]  # the agent's next key, as `learn_one` keeps it
        starts = jnp.concatenate(rows, axis=1)  # [P, U * B]
        flat = (
            replay_lib.gather_population(replay.data, starts)
            if horizon == 1
            else replay_lib.gather_window_population(replay, starts, horizon)
        )
        batches = jax.tree_util.tree_map(
            lambda x: x.reshape((size, updates_per_step, batch_size) + x.shape[2:]), flat
        )

        def agent_updates(
            learner: Learner,
            keys: jax.Array,
            batches: Any,
            act_obs: jax.Array,
            act_noise: jax.Array | None,
        ) -> tuple[Learner, jax.Array]:
            for u in range(updates_per_step):
                batch = jax.tree_util.tree_map(lambda x, u=u: x[u], batches)
                learner, action, _ = learn_one(learner, keys[u], batch, act_obs, act_noise)
            return learner, action

        over = population.over_agents(
            agent_updates, (axes, 0, 0, 0, 0), (axes, 0), size, population_loop
        )
        return over(rest, jnp.stack(keys, axis=1), batches, act_obs, act_noise)

    def act_deterministic(agent: Any, obs: jax.Array) -> jax.Array:
        # A deterministic policy draws no randomness; the key is a placeholder.
        return algo.act(agent, obs[None], jax.random.key(0), deterministic=True)[0]

    return StepFunctions(
        collect=jax.jit(collect, donate_argnums=0),
        learn=jax.jit(learn, donate_argnums=0, compiler_options=algos.compiler_options(algo)),
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
    """One agent's fresh learner with an empty buffer (no population axis)."""
    spec = replay_lib.ReplaySpec(
        capacity=capacity,
        obs_size=obs_size,
        action_size=action_size,
        prioritized=algos.prioritized(algo, algo_config),
    )
    replay = replay_lib.create(spec)
    agent_key, key = jax.random.split(key)
    agent = algo.init(agent_key, obs_size, action_size, algo_config)
    batch = replay_lib.sample_batch(replay, key, batch_size, algos.horizon(algo, algo_config))
    sums = zero_metrics(algo, agent, batch, key)
    return Learner(agent, replay, key, sums, jnp.int32(0))


def init_population(
    algo: ModuleType,
    algo_configs: Sequence[Any],
    seeds: Sequence[int],
    obs_size: int,
    action_size: int,
    capacity: int,
    batch_size: int,
) -> Learner:
    """P agents' learners: agent i with `algo_configs[i]` (equal but for traced fields)
    and key jax.random.key(seeds[i]), exactly as a run of its own with that seed."""
    if len(algo_configs) != len(seeds):
        raise ValueError(f"{len(algo_configs)} configs for {len(seeds)} seeds")
    keys = jnp.stack([jax.random.key(seed) for seed in seeds])

    def one(algo_config: Any, key: jax.Array) -> Learner:
        return init_learner(algo, algo_config, obs_size, action_size, capacity, batch_size, key)

    axes = learner_axes(jax.eval_shape(one, algo_configs[0], keys[0]))
    # Jitted: run eagerly, the initialisers would compile one small program per operation
    # (TD3: 133 programs instead of 25; 3-25 s of a short run's start-up on one core,
    # measured on two machines).
    over = jax.jit(
        population.over_agents(one, (0, 0), axes, len(seeds)),
        compiler_options=algos.init_compiler_options(),
    )
    learner = over(population.stack(algo_configs), keys)
    # The steps donate the learner, and XLA refuses to donate one buffer twice: a learner
    # may hold one array under two names.
    return jax.tree_util.tree_map(jnp.copy, learner)


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
    learner: Learner  # the population's (leading [P] axis on per-agent leaves)
    evaluations: list[list[dict[str, float]]]  # per agent, one row per evaluation
    step_functions: StepFunctions

    def agent(self, i: int = 0) -> Learner:
        """Agent i's own learner (no population axis)."""
        return agent_learner(self.learner, i)


def agent_learner(learner: Learner, i: int) -> Learner:
    """Agent i's own learner out of a population learner."""
    return population.index_agent(learner, learner_axes(learner), i)


class Collector:
    """Steps P host environments (one per agent) and makes the loop's one jitted call per
    step for all of them.

    Holds the population learner, the current observations, the actions to
    take next and the episode bookkeeping. `train_population` drives it; the
    benchmark times it. Agent i's warm-up actions come from its own seed, so it
    collects exactly what a run of its own would. With `n_step` > 1 the stored
    transitions are n-step ones (`jax_rl.loops.nstep`, agent i discounting by
    `discounts[i]`), stored n_step - 1 steps late. With `noise_color` > 0 the
    exploration noise is colored (`jax_rl.core.noise`): agent i's comes from its own
    sequence, drawn anew at each of its episode starts (and for the first learned
    action, which may fall mid-episode).
    """

    def __init__(
        self,
        envs: Sequence[HostEnv],
        fns: StepFunctions,
        learner: Learner,
        start_timesteps: int,
        seeds: Sequence[int],
        n_step: int = 1,
        discounts: Sequence[float] | None = None,
        noise_color: float = 0.0,
    ) -> None:
        if len(envs) != len(seeds):
            raise ValueError(f"{len(envs)} environments for {len(seeds)} seeds")
        if n_step > 1 and (discounts is None or len(discounts) != len(seeds)):
            raise ValueError("n-step returns need one discount per agent")
        if start_timesteps < n_step:
            raise ValueError(f"start_timesteps ({start_timesteps}) must be at least n_step")
        self.queue = NStepQueue(
            n_step,
            discounts if discounts is not None else [1.0] * len(seeds),
            envs[0].obs_size,
            envs[0].action_size,
        )
        self.envs = list(envs)
        self.fns = fns
        self.learner = learner
        self.start_timesteps = start_timesteps
        self.learn_from = start_timesteps  # the step from which `learn` replaces `collect`
        self.steps = 0  # frames stepped (per environment)
        self.last_frames = 0  # frames the last step advanced
        size = len(self.envs)
        self.episode_return = np.zeros(size)
        self.last_episode_return = np.full(size, np.nan)
        self.non_finite_actions: set[int] = set()  # agents that acted NaN (populations)
        self._warmup_rngs = [np.random.default_rng(seed) for seed in seeds]
        action_size = envs[0].action_size
        self._noise = (
            [ColoredNoise(noise_color, action_size, seed) for seed in seeds]
            if noise_color > 0
            else None
        )
        self._obs = np.stack([np.asarray(env.reset(), np.float32) for env in self.envs])
        self._action = np.zeros((size, self.envs[0].action_size), np.float32)

    @property
    def num_agents(self) -> int:
        return len(self.envs)

    def step(self) -> None:
        """One step of every environment and one jitted call (collect or learn)."""
        if self.steps < self.learn_from:
            size = self._action.shape[1]
            self._action = np.stack(
                [rng.uniform(-1.0, 1.0, size).astype(np.float32) for rng in self._warmup_rngs]
            )
        else:
            bad = ~np.isfinite(self._action).all(axis=1)
            if bad.any():
                if self.num_agents == 1:
                    raise NonFiniteError(self.steps, "action", None)
                # A diverged agent's environment goes on with a neutral action.
                self.non_finite_actions.update(int(i) for i in np.flatnonzero(bad))
                self._action[bad] = 0.0
        steps = [env.step(a) for env, a in zip(self.envs, self._action, strict=True)]
        # Frames, as the environments report them (1 each without an action repeat); agents
        # whose episode ended inside a repeat stepped fewer: the clock takes the most.
        self.last_frames = max(s.frames for s in steps)
        transition = Transition(
            obs=self._obs,
            action=self._action,
            reward=np.array([s.reward for s in steps], np.float32),
            discount=np.array([s.discount for s in steps], np.float32),
            next_obs=np.stack([np.asarray(s.next_obs, np.float32) for s in steps]),
        )
        next_obs: list[np.ndarray] = []
        for i, (env, s) in enumerate(zip(self.envs, steps, strict=True)):
            self.episode_return[i] += s.reward
            if s.last:
                self.last_episode_return[i], self.episode_return[i] = self.episode_return[i], 0.0
                next_obs.append(np.asarray(env.reset(), np.float32))
                if self._noise is not None:
                    self._noise[i].reset()
            else:
                next_obs.append(np.asarray(s.next_obs, np.float32))
        self._obs = np.stack(next_obs)
        self.steps += self.last_frames
        stored = self.queue.push(transition, np.array([s.last for s in steps]))
        if self.steps < self.learn_from:
            if stored is not None:
                self.learner = self.fns.collect(self.learner, stored)
        else:
            assert stored is not None  # learn_from >= start_timesteps >= n_step
            noise = None
            if self._noise is not None:
                noise = np.stack([agent_noise.next() for agent_noise in self._noise])
            self.learner, action = self.fns.learn(self.learner, stored, self._obs, noise)
            self._action = np.array(action)

    def checkpoint(self, keep_replay: bool) -> tuple[dict[str, Any], dict[str, Any]]:
        """(arrays, host state): what a checkpoint holds of the collector."""
        learner = self.learner if keep_replay else self.learner.replace(replay=None)
        arrays = {"learner": learner, "obs": self._obs, "action": self._action}
        pending = 0
        if self.queue.n > 1:
            arrays["n_step"], pending = self.queue.state()
        noise_host = []
        if self._noise is not None:
            states = [agent_noise.state() for agent_noise in self._noise]
            arrays["noise"] = np.stack([sequence for sequence, _ in states])
            noise_host = [host for _, host in states]
        host = {
            "n_step_pending": pending,
            "steps": self.steps,
            "learn_from": self.learn_from,
            "episode_return": [float(x) for x in self.episode_return],
            "last_episode_return": [_json_float(x) for x in self.last_episode_return],
            "warmup_rng": [random_state_to_json(rng) for rng in self._warmup_rngs],
            "env": [env.get_state() for env in self.envs],
            "replay_saved": keep_replay,
            "noise": noise_host,
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
        if self.queue.n > 1:
            self.queue.restore(arrays["n_step"], host["n_step_pending"])
        self._obs = np.asarray(arrays["obs"], np.float32)
        self._action = np.array(arrays["action"], np.float32)
        self.steps = host["steps"]
        self.episode_return = np.array(host["episode_return"], np.float64)
        self.last_episode_return = np.array(
            [_from_json_float(x) for x in host["last_episode_return"]], np.float64
        )
        for rng, state in zip(self._warmup_rngs, host["warmup_rng"], strict=True):
            random_state_from_json(rng, state)
        for env, state in zip(self.envs, host["env"], strict=True):
            env.set_state(state)
        if self._noise is not None:
            for agent_noise, sequence, state in zip(
                self._noise, arrays["noise"], host["noise"], strict=True
            ):
                agent_noise.restore(sequence, state)


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
    """Train one agent (seed `config.seed`) on `env`; see `train_population`."""
    return train_population(
        algo,
        [algo_config],
        [config.seed],
        [env],
        [eval_env],
        config,
        PopulationLogger([logger]),
        control,
    )


def train_population(
    algo: ModuleType,
    algo_configs: Sequence[Any],
    seeds: Sequence[int],
    envs: Sequence[HostEnv],
    eval_envs: Sequence[HostEnv],
    config: HostLoopConfig,
    logger: PopulationLogger,
    control: RunControl | None = None,
    recorder: Any = None,
) -> TrainResult:
    """Train P agents (agent i: `algo_configs[i]`, `seeds[i]`, `envs[i]`, evaluated on
    `eval_envs[i]`) for `config.max_timesteps` steps each, in lock step: every step
    moves each environment once and makes one jitted call for all agents.
    (`config.seed` is not used: the seeds are the agents'.)

    Agent i trains exactly as a run of its own with seed `seeds[i]` would (to
    float tolerance: vmapped matrix products may round differently). With
    `control`, checkpoint (and resume) as it says. A non-finite loss, parameter
    or action stops a one-agent run (NonFiniteError); in a population the agent
    is reported and the others go on, until none is left. Interrupted after
    saving on SIGINT/SIGTERM. With `recorder` (`play.VideoRecorder`, --video_every),
    record videos of the agents at its steps.
    """
    if not len(envs) == len(eval_envs) == len(algo_configs) == len(seeds):
        raise ValueError("one config, environment and evaluation environment per seed")
    run = _PopulationRun.start(algo, algo_configs, seeds, envs, eval_envs, config, logger, control)
    run.recorder = recorder
    evaluations = run.first_evaluations()
    with StopSignals() if control is not None else contextlib.nullcontext() as signals:
        while run.collector.steps < config.max_timesteps:
            run.step()
            run.log_and_evaluate(evaluations)
            if recorder is not None:  # tested here: a run without videos pays no call
                run.record_video()
            run.checkpoint(signals)
    return run.finish(evaluations)


@dataclasses.dataclass
class _PopulationRun:
    """The pieces of one `train_population` call and its steps: set-up (`start`, the
    first evaluations), the body of every environment step (`step`, `log_and_evaluate`,
    `checkpoint`) and the end (`finish`)."""

    config: HostLoopConfig
    eval_envs: Sequence[HostEnv]
    logger: PopulationLogger
    control: RunControl | None
    fns: StepFunctions
    collector: Collector
    axes: Learner
    finite: Callable[[Any], jax.Array]
    watch: DivergenceWatch
    recorder: Any = None  # play.VideoRecorder, with --video_every

    @classmethod
    def start(
        cls,
        algo: ModuleType,
        algo_configs: Sequence[Any],
        seeds: Sequence[int],
        envs: Sequence[HostEnv],
        eval_envs: Sequence[HostEnv],
        config: HostLoopConfig,
        logger: PopulationLogger,
        control: RunControl | None,
    ) -> _PopulationRun:
        """Build the learners, their step functions and the collector."""
        check_learner(algo, algo_configs[0], config.n_step)
        loop = resolve_population_loop(config.population_loop, algo_configs[0], len(seeds))
        fns = make_step_functions(algo, config.batch_size, config.updates_per_step, loop)
        obs_size, action_size = envs[0].obs_size, envs[0].action_size
        learner = init_population(
            algo, algo_configs, seeds, obs_size, action_size, config.capacity, config.batch_size
        )
        axes = learner_axes(learner)
        discounts = [float(c.discount) for c in algo_configs]
        collector = Collector(
            envs, fns, learner, config.start_timesteps, seeds, config.n_step, discounts,
            config.noise_color,
        )  # fmt: skip
        finite = jax.jit(population.over_agents(all_finite, (axes.agent,), 0, len(seeds)))
        watch = DivergenceWatch(seeds, logger.message)
        return cls(config, eval_envs, logger, control, fns, collector, axes, finite, watch)

    @property
    def num_agents(self) -> int:
        return len(self.eval_envs)

    def last_saved(self) -> int | None:
        return self.control.last_saved if self.control is not None else None

    def params_ok(self) -> list[bool]:
        return [bool(v) for v in jax.device_get(self.finite(self.collector.learner.agent))]

    def agent(self, i: int) -> Any:
        return population.index_agent(self.collector.learner.agent, self.axes.agent, i)

    def evaluate_all(self, step: int) -> list[dict[str, float]]:
        """Every agent's evaluation at `step` (NaN for one that diverged), logged."""
        ok = self.params_ok()
        returns = []
        for i, eval_env in enumerate(self.eval_envs):
            if self.num_agents > 1 and not ok[i]:
                self.watch.mark(i, step)
            if i in self.watch.diverged:
                returns.append([float("nan")] * self.config.eval_episodes)
                continue
            episodes = self.config.eval_episodes
            returns.append(evaluate(self.fns.act_deterministic, self.agent(i), eval_env, episodes))
        return self.logger.log_evaluation(step, returns)

    def first_evaluations(self) -> list[list[dict[str, float]]]:
        """The evaluations so far: those of the checkpoint resumed from, else step 0's."""
        if self.control is not None and self.control.resume:
            return _resume(self.control, self.collector, self.eval_envs, self.logger)
        return [[row] for row in self.evaluate_all(0)]

    def step(self) -> None:
        """Move every environment once and learn; a non-finite value names its source."""
        try:
            self.collector.step()
        except NonFiniteError as e:
            # Name the loss that went first where there is one, else the action.
            self.collector.learner, rows = pull_metrics(self.collector.learner)
            check_finite(e.step, rows[0], True, self.last_saved())
            raise NonFiniteError(e.step, e.what, self.last_saved()) from None

    def reached(self, every: int) -> bool:
        """Whether the last step reached or passed a multiple of `every` frames (with one
        frame a step, whether it stands on one)."""
        done = self.collector.steps
        return (done - self.collector.last_frames) // every < done // every

    def at_end(self) -> bool:
        return self.collector.steps >= self.config.max_timesteps

    def log_and_evaluate(self, evaluations: list[list[dict[str, float]]]) -> None:
        """At logging points, the training metrics (and divergence checks); at evaluation
        points and the end, an evaluation appended to `evaluations`."""
        done, config = self.collector.steps, self.config
        if self.reached(config.log_freq):
            self.logger.advance_to(done)
            self.collector.learner, rows = pull_metrics(self.collector.learner)
            ok = self.params_ok()
            for i in self.collector.non_finite_actions:
                ok[i] = False
            self.watch.check(done, rows, ok, self.last_saved())
            for row, episode_return in zip(rows, self.collector.last_episode_return, strict=True):
                row["episode_return"] = float(episode_return)
            self.logger.log_train(done, rows)
        if self.reached(config.eval_freq) or self.at_end():
            for kept, row in zip(evaluations, self.evaluate_all(done), strict=True):
                kept.append(row)

    def record_video(self) -> None:
        """At the recorder's steps and at the end, a video of every agent not diverged."""
        done = self.collector.steps
        before = done - self.collector.last_frames
        if self.recorder.due(before, done, self.at_end()):
            self.recorder.record(done, self.agent, skip=self.watch.diverged)

    def checkpoint(self, signals: StopSignals | None) -> None:
        """Save at checkpoint points, at the end and on a signal (then stop)."""
        control, done = self.control, self.collector.steps
        if control is None:
            return
        received = signals.received if signals is not None else None
        if self.reached(control.every) or self.at_end() or received:
            arrays, host = self.collector.checkpoint(control.keep_replay)
            meta = {
                "host": host,
                "eval_env": [eval_env.get_state() for eval_env in self.eval_envs],
                "wall_time": self.logger.wall_time,
            }
            # A population keeps saving while one of its agents is still finite.
            control.save(done, any(self.params_ok()), arrays, meta)
        if received:
            raise Interrupted(received, done, control.checkpointer.directory)
        control.after_step(done)

    def finish(self, evaluations: list[list[dict[str, float]]]) -> TrainResult:
        """Write each agent's final parameters (agent.msgpack) beside its logs."""
        self.logger.advance_to(self.collector.steps)
        for i, agent_logger in enumerate(self.logger.agents):
            with (agent_logger.save_dir / "agent.msgpack").open("wb") as f:
                f.write(flax.serialization.to_bytes(self.agent(i)))
        return TrainResult(self.collector.learner, evaluations, self.fns)


def _resume(
    control: RunControl,
    collector: Collector,
    eval_envs: Sequence[HostEnv],
    logger: PopulationLogger,
) -> list[list[dict[str, float]]]:
    """Load the newest checkpoint into `collector` and `eval_envs`; continue the logs."""

    def template(meta: dict[str, Any]) -> dict[str, Any]:
        return collector.checkpoint(keep_replay=meta["host"]["replay_saved"])[0]

    arrays, meta = control.load(template)
    collector.restore(arrays, meta["host"])
    for eval_env, state in zip(eval_envs, meta["eval_env"], strict=True):
        eval_env.set_state(state)
    step = meta["step"]
    if not meta["host"]["replay_saved"]:
        logger.message(
            f"warning: the checkpoint at step {step} holds no replay buffer; refilling "
            f"{collector.start_timesteps} steps before learning again, so this run's data "
            "differ from an uninterrupted one"
        )
    logger.message(f"resumed from the checkpoint at step {step}")
    return logger.resume(step, meta["wall_time"])
