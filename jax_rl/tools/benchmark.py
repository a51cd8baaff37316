"""Seconds per 1000 training steps for each learner, in one command.

    python -m jax_rl.tools.benchmark            # full table (make bench)
    python -m jax_rl.tools.benchmark --quick    # tiny sizes, same code path (used by the tests)
    python -m jax_rl.tools.benchmark --policies SAC --population 1,4,16   # populations (make
                                          # bench-population): N agents against one
    python -m jax_rl.tools.benchmark --playground CartpoleSwingup,CheetahRun   # the same DM
                                          # Control tasks on both loops (MJX vs C MuJoCo)
    python -m jax_rl.tools.benchmark --policies SAC --population 1,16,64 --playground CheetahRun
    python -m jax_rl.tools.benchmark --critics  # CrossQ, SimBa(V2) at CPU and published widths
                                          # (make bench-critics): writes critics.md

A training step of the host loop is one dm_control environment step plus the
loop's one jitted call (insert, sample a batch of 256, one update, next
action), exactly as `jax_rl.loops.host.Collector` runs it during training.
Times are steady state: the buffer is prefilled, compilation is timed apart,
warm-up steps are not timed, and every timed block ends with
`block_until_ready` on the whole learner (see `jax_rl.tools.timing`).

Writes docs/benchmarks/host.md and host.json with the machine's description
(brax.md, population.md and playground.md for the other modes).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jax_rl import algos
from jax_rl.algos import mpo
from jax_rl.core import population
from jax_rl.core import replay as replay_lib
from jax_rl.envs import HostEnv, point_mass
from jax_rl.envs.brax import CUSTOM_BACKEND, BraxEnv
from jax_rl.envs.repeat import repeat_actions
from jax_rl.io.logger import scratch_folder
from jax_rl.loops import device, host
from jax_rl.run import presets
from jax_rl.tools import timing


@dataclasses.dataclass(frozen=True)
class BenchSettings:
    batch_size: int = 256
    hidden_sizes: tuple[int, ...] = (256, 256)
    steps_per_block: int = 1000
    num_blocks: int = 5
    warmup_steps: int = 500
    prefill: int = 1000
    domain_name: str = "cartpole"
    task_name: str = "swingup"


@dataclasses.dataclass(frozen=True)
class DeviceBenchSettings:
    env: str = "halfcheetah"
    backend: str = "positional"
    num_envs: int = 16
    updates_per_step: int = 16
    batch_size: int = 256
    hidden_sizes: tuple[int, ...] = (256, 256)
    iterations_per_chunk: int = 25
    num_blocks: int = 5
    warmup_chunks: int = 1


QUICK_DEVICE = DeviceBenchSettings(
    env=point_mass.NAME,  # compiles in seconds: --quick checks the code path, not the physics
    backend=CUSTOM_BACKEND,  # the point mass's: an environment envs.brax.BraxEnv wraps
    num_envs=4,
    updates_per_step=2,
    batch_size=16,
    hidden_sizes=(16,),
    iterations_per_chunk=4,
    num_blocks=2,
    warmup_chunks=1,
)


QUICK = BenchSettings(
    batch_size=32,
    hidden_sizes=(32, 32),
    steps_per_block=20,
    num_blocks=2,
    warmup_steps=5,
    prefill=64,
)


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    first_device = jax.devices()[0]
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "accelerator": first_device.device_kind if first_device.platform != "cpu" else "none",
        "jax": jax.__version__,
        "python": platform.python_version(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }


# MPO as `make mpo-returns` trains it (>= 800 on cartpole-swingup at 100k steps,
# docs/results/README.md): the host benchmark times it beside the solver defaults.
MPO_RETURNS_LABEL = "MPO (scipy, returns config)"
MPO_RETURNS_OVERRIDES: dict[str, Any] = {
    "dual_solver": "scipy",
    "input_layer": "layernorm",
    "target_update_period": 100,
    "epsilon_std": 1e-5,
    "n_step": 5,
}


# The critics of 2024-25 (`--critics`, make bench-critics), on TD3 and SAC: each option at
# the widths a 2-core CPU trains it with and at the published widths. Fewer, shorter blocks
# than the main table: the published SimBa critic costs minutes per 1000 steps on a CPU.
CRITIC_SETTINGS = BenchSettings(steps_per_block=200, num_blocks=3, warmup_steps=100)
CROSSQ_OVERRIDES: dict[str, Any] = {"crossq": True, "policy_freq": 3, "adam_beta1": 0.5}
# The dm_control suite entry (jax_rl/presets/td3.toml's `dm_control/*`): CrossQ at 256-256
# critics and Adam lr 1e-3.
CROSSQ_ENTRY: dict[str, Any] = {**CROSSQ_OVERRIDES, "actor_lr": 1e-3, "critic_lr": 1e-3}
CROSSQ_LEARNERS = ("TD3", "SAC")
SIMBA_OVERRIDES: dict[str, Any] = {
    "actor_network": "simba",
    "critic_network": "simba",
    "actor_hidden_sizes": (128,),
    "actor_blocks": 1,
    "critic_blocks": 2,
    "normalize_obs": True,
    "weight_decay": 1e-2,
}
SIMBAV2_OVERRIDES: dict[str, Any] = {
    **SIMBA_OVERRIDES,
    "actor_network": "simbav2",
    "critic_network": "simbav2",
    "weight_decay": 0.0,
    "scale_rewards": True,
    "critic": "categorical",
    "v_min": -5.0,
    "v_max": 5.0,
}
CRITIC_VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("crossq, critics 256-256", {**CROSSQ_OVERRIDES, "critic_hidden_sizes": (256, 256)}),
    ("crossq, critics 512-512", {**CROSSQ_OVERRIDES, "critic_hidden_sizes": (512, 512)}),
    (
        "crossq, critics 2048-2048 (published)",
        {**CROSSQ_OVERRIDES, "critic_hidden_sizes": (2048, 2048)},
    ),
    ("simba, critic 128 x 2 blocks", {**SIMBA_OVERRIDES, "critic_hidden_sizes": (128,)}),
    ("simba, critic 256 x 2 blocks", {**SIMBA_OVERRIDES, "critic_hidden_sizes": (256,)}),
    (
        "simba, critic 512 x 2 blocks (published)",
        {**SIMBA_OVERRIDES, "critic_hidden_sizes": (512,)},
    ),
    ("simbav2, critic 128 x 2 blocks", {**SIMBAV2_OVERRIDES, "critic_hidden_sizes": (128,)}),
    (
        "simbav2, critic 512 x 2 blocks (published)",
        {**SIMBAV2_OVERRIDES, "critic_hidden_sizes": (512,)},
    ),
]


def critic_variants(name: str) -> list[tuple[str, dict[str, Any]]]:
    """(row label, overrides) for TD3 or SAC: the published networks, then each critic option."""
    return [(name, {}), *[(f"{name} {label}", o) for label, o in CRITIC_VARIANTS]]


# TD7's parts (`--preset td7`, `--preset sac-sale`): the Config fields those presets set
# beyond the defaults (encoders 256-256, embeddings of 256 are the defaults).
SALE_LAP_OVERRIDES: dict[str, Any] = {"representation": "sale", "replay": "lap"}
TD7_OVERRIDES: dict[str, Any] = {**SALE_LAP_OVERRIDES, "target_every": 250, "clip_values": True}
REPRESENTATION_ROWS: dict[str, tuple[str, dict[str, Any]]] = {
    "TD3": ("TD7 (TD3 + SALE + LAP, --preset td7)", TD7_OVERRIDES),
    "SAC": ("SAC + SALE + LAP (--preset sac-sale)", SALE_LAP_OVERRIDES),
}


def preset_overrides(policy: str, name: str, backend: str = "gymnasium") -> dict[str, Any]:
    """The learner Config fields a named preset sets (its loop settings left out), read from
    the preset file, so that a row times exactly what `--preset NAME` trains."""
    preset = presets.resolve(policy, backend, "any", name)
    assert preset is not None
    fields = {f.name for f in dataclasses.fields(algos.get(policy).Config)}
    return {
        k: tuple(v) if isinstance(v, list) else v for k, v in preset.settings.items() if k in fields
    }


CROSSQ_ENTRY_LABEL = "TD3, CrossQ entry (the dm_control suite entry)"
MRQ_LABEL = "MR.Q (TD3 + MR.Q's representation, --preset mrq)"
# MR.Q's update is ~23x TD3's (11.6 GFLOP): fewer timed steps, the same code path.
MRQ_TIMING = {"steps_per_block": 100, "num_blocks": 3, "warmup_steps": 50}


def variants(name: str) -> list[tuple[str, dict[str, Any]]]:
    """(row label, overrides) for learner `name`: MPO once per dual solver, then in
    its returns configuration; TD3 and SAC, then with TD7's SALE and LAP, then with action
    repeat 2. Overrides are Config fields, and n_step and action_repeat for the loop."""
    if name == "MPO":
        rows = [(f"MPO ({solver})", {"dual_solver": solver}) for solver in mpo.DUAL_SOLVERS]
        return [*rows, (MPO_RETURNS_LABEL, dict(MPO_RETURNS_OVERRIDES))]
    if name == "TD3":
        entry = (CROSSQ_ENTRY_LABEL, CROSSQ_ENTRY)
        mrq = (MRQ_LABEL, preset_overrides("TD3", "mrq"))
        # TD7 second: the Brax pipeline times the first two rows.
        return [(name, {}), REPRESENTATION_ROWS[name], entry, mrq, repeated(name)]
    if name in REPRESENTATION_ROWS:
        return [(name, {}), REPRESENTATION_ROWS[name], repeated(name)]
    return [(name, {})]


def population_rows(name: str, size: int) -> list[tuple[str, dict[str, Any]]]:
    """(row label, overrides) for `--host_population`: learner `name` plain and with its
    CrossQ entry (the dm_control suite entry), as one agent and as `size` agents vmapped and
    mapped (`--population_loop`)."""
    rows = []
    for what, overrides in ((name, {}), (f"{name}, CrossQ entry", CROSSQ_ENTRY)):
        rows.append((f"{what}, 1 agent", overrides))
        for loop in population.LOOPS:
            rows.append(
                (
                    f"{what}, {size} agents, {loop}",
                    {**overrides, "num_agents": size, "population_loop": loop},
                )
            )
    return rows


# The loop settings a preset may set that a timed row takes (the rest of its loop settings,
# such as start_timesteps, do not change a step's cost).
TIMED_LOOP_SETTINGS = ("action_repeat", "updates_per_step", "noise_color")
# `--recipe`'s timing: a 3-agent row at R13's cost is ~80 ms per step; 2 blocks of 500 steps
# keep the whole table near 5 minutes on 2 cores.
RECIPE_SETTINGS = BenchSettings(steps_per_block=500, num_blocks=2, warmup_steps=300)


def preset_row(policy: str, name: str, backend: str = "dm_control") -> dict[str, Any]:
    """Everything a timed row takes from `--preset NAME` on `backend`: the learner's Config
    fields and the loop's `TIMED_LOOP_SETTINGS`, as the preset file resolves them."""
    preset = presets.resolve(policy, backend, "any", name)
    if preset is None:
        return {}
    fields = {f.name for f in dataclasses.fields(algos.get(policy).Config)} | set(
        TIMED_LOOP_SETTINGS
    )
    return {
        k: tuple(v) if isinstance(v, list) else v for k, v in preset.settings.items() if k in fields
    }


def recipe_rows(
    name: str, size: int, backend: str = "dm_control"
) -> list[tuple[str, dict[str, Any]]]:
    """(row label, overrides) for `--recipe`: learner `name`'s defaults on `backend` (its `*`
    entry, `--preset auto`) as one agent, then `--preset recipe` as one agent and as a
    population of `size` on the loop `--population_loop auto` picks (what a results cell of
    `size` seeds trains)."""
    entry, recipe = preset_row(name, presets.AUTO, backend), preset_row(name, "recipe", backend)
    if not recipe:  # a recipe resolves to settings or raises: never the bare defaults
        raise ValueError(f"--preset recipe of {name} sets nothing on {backend}")
    config = algos.get(name).Config(
        **{k: v for k, v in recipe.items() if k not in TIMED_LOOP_SETTINGS}
    )
    loop = host.resolve_population_loop("auto", config, size)
    return [
        (f"{name}, --preset auto ({backend}), 1 agent", entry),
        (f"{name}, --preset recipe ({backend}), 1 agent", recipe),
        (
            f"{name}, --preset recipe ({backend}), {size} agents, {loop}",
            {**recipe, "num_agents": size, "population_loop": loop},
        ),
    ]


def repeated(name: str, action_repeat: int = 2) -> tuple[str, dict[str, Any]]:
    """The row of learner `name` holding each decision for `action_repeat` frames (the
    field's DM Control protocol): timed per 1000 frames, half the updates of a plain row."""
    return f"{name}, action repeat {action_repeat}", {"action_repeat": action_repeat}


def quick_sized(overrides: dict[str, Any]) -> dict[str, Any]:
    """A row's overrides at --quick's tiny sizes: SALE's encoders 8 wide (the same code
    path; the networks' own widths come from the settings)."""
    if overrides.get("representation") == "mrq":  # MR.Q's networks are all its own widths
        small = {"embedding_size": 8, "action_embedding_size": 8, "num_bins": 5}
        sizes = ("encoder_hidden_sizes", "actor_hidden_sizes", "critic_hidden_sizes")
        return {**overrides, **small, **{k: (8,) for k in sizes}}
    if overrides.get("representation") != "sale":
        return overrides
    return {**overrides, "encoder_hidden_sizes": (8,), "embedding_size": 8}


def time_lap_sampling(capacity: int, batch_size: int = 256, repeats: int = 200) -> dict[str, float]:
    """Milliseconds per batch of `batch_size` rows drawn from a full buffer of `capacity`
    rows: by priority (LAP: a cumulative sum and binary searches) and uniformly, each a
    jitted call timed `repeats` times (median)."""
    priority = jax.random.uniform(jax.random.key(0), (capacity,), minval=1.0, maxval=3.0)
    size = jnp.int32(capacity)
    by_priority = jax.jit(lambda k, p: replay_lib.sample_rows(k, size, batch_size, p))
    uniform = jax.jit(lambda k, p: replay_lib.sample_rows(k, size, batch_size))
    out: dict[str, float] = {"capacity": capacity, "batch_size": batch_size}
    for label, fn in (("prioritized_ms", by_priority), ("uniform_ms", uniform)):
        keys = jax.random.split(jax.random.key(1), repeats + 1)
        fn(keys[0], priority).block_until_ready()  # compile
        times = []
        for key in keys[1:]:
            start = time.perf_counter()
            fn(key, priority).block_until_ready()
            times.append(time.perf_counter() - start)
        out[label] = 1e3 * float(np.median(times))
    return out


def time_scipy_solve(agent: Any, batch: Any, repeats: int = 20) -> float:
    """Seconds per host SLSQP solve of MPO's temperature on a real E-step's Q [B, N]."""
    _, _, _, q = jax.jit(mpo.sample_target_actions)(agent, batch.obs, jax.random.key(0))
    q = jax.device_get(q)
    start_eta, epsilon = float(agent.temperature), float(agent.config.epsilon)
    mpo._solve_on_host(q, start_eta, epsilon)  # compiles the float64 dual
    start = time.perf_counter()
    for _ in range(repeats):
        mpo._solve_on_host(q, start_eta, epsilon)
    return (time.perf_counter() - start) / repeats


def bench_host_step(
    name: str,
    settings: BenchSettings,
    seed: int = 0,
    label: str = "",
    n_step: int = 1,
    make_env: Callable[[int], HostEnv] | None = None,
    action_repeat: int = 1,
    num_agents: int = 1,
    population_loop: str = "vmap",
    updates_per_step: int = 1,
    noise_color: float = 0.0,
    **overrides: Any,
) -> dict[str, Any]:
    """Seconds per 1000 host-loop training steps of learner `name` (Config `overrides`;
    `n_step` > 1 stores n-step transitions, as main_dm_control.py --n_step does). With
    `action_repeat` K > 1 each step holds its decision for K frames (one update per K
    frames, `--action_repeat`): the figures are then per 1000 frames, as the loop counts.
    With `num_agents` P > 1 a step is every agent's (P environments, one call updating all
    P, vmapped or mapped as `population_loop` says): the figures are the population's.
    `updates_per_step` and `noise_color` are the loop's (`--updates_per_step`,
    `--noise_color`)."""
    algo = algos.get(name)
    config = algo.Config(hidden_sizes=settings.hidden_sizes, **overrides)
    seeds = list(range(seed, seed + num_agents))
    # Imported here so that the Brax-only benchmark (--skip_host) runs without dm_control,
    # e.g. on an accelerator machine that has only JAX and Brax.
    if make_env is None:
        from jax_rl.envs.dm_control import DMControlEnv

        def make_env(s: int) -> HostEnv:
            return DMControlEnv(settings.domain_name, settings.task_name, seed=s)

    envs = [repeat_actions(make_env(s), action_repeat) for s in seeds]
    env = envs[0]
    fns = host.make_step_functions(algo, settings.batch_size, updates_per_step, population_loop)
    capacity = settings.prefill + settings.steps_per_block * (settings.num_blocks + 1) + 1
    capacity += settings.warmup_steps
    learner = host.init_population(
        algo,
        [config] * num_agents,
        seeds,
        env.obs_size,
        env.action_size,
        capacity,
        settings.batch_size,
    )
    collector = host.Collector(
        envs,
        fns,
        learner,
        settings.prefill,
        seeds,
        n_step=n_step,
        discounts=[config.discount] * num_agents,
        noise_color=noise_color,
    )
    # Up to the last step before learning starts: the first `learn` (its compilation) is
    # the timed first call. A step is action_repeat frames.
    while collector.steps + action_repeat < settings.prefill:
        collector.step()

    def step() -> host.Learner:
        collector.step()
        return collector.learner

    result = timing.time_steps(
        step, settings.steps_per_block, settings.num_blocks, settings.warmup_steps
    )
    # A step is action_repeat frames (dm_control's 1000-frame episodes: exactly, for K = 2).
    median, mean, std = (t / action_repeat for t in result.per_1000())
    trained = host.agent_learner(collector.learner, 0)
    # The batch the loop hands the update: windows of rows for a learner that reads them.
    horizon = algos.horizon(algo, trained.agent.config)
    batch = replay_lib.sample_batch(trained.replay, jax.random.key(0), settings.batch_size, horizon)
    flops = timing.compiled_flops(jax.jit(algo.update), trained.agent, batch, jax.random.key(0))
    solve = None
    if name == "MPO" and config.dual_solver == "scipy":
        solve = time_scipy_solve(trained.agent, batch)
    return {
        "policy": label or name,
        "action_repeat": action_repeat,
        "num_agents": num_agents,
        "population_loop": population_loop if num_agents > 1 else None,
        "scipy_solve_seconds": solve,
        "seconds_per_1000_median": median,
        "seconds_per_1000_mean": mean,
        "seconds_per_1000_std": std,
        "compile_seconds": result.first_call_seconds,
        "flops_per_update": flops,
        # A step (action_repeat frames) updates every agent updates_per_step times.
        "updates_per_step": updates_per_step,
        "achieved_flops_per_second": (
            flops * updates_per_step * num_agents / (median * action_repeat / 1000.0)
            if flops
            else None
        ),
        "blocks": list(result.block_seconds),
    }


def device_env(settings: DeviceBenchSettings) -> BraxEnv:
    """The settings' batched environment: a Playground task (backend "jax") or Brax's."""
    from jax_rl.envs import playground

    if settings.env == point_mass.NAME:
        return point_mass.point_mass_env(episode_length=1000)
    if settings.backend in playground.IMPLS:  # mujoco_playground is imported only then
        return playground.make_env(settings.env, settings.backend)
    return BraxEnv(settings.env, settings.backend, episode_length=1000)


def bench_device_physics(settings: DeviceBenchSettings) -> dict[str, Any]:
    """Environment steps per second of the batched environment alone: `num_envs`
    environments stepped (auto-reset included) by uniform random actions in a jitted scan
    of `iterations_per_chunk` steps; no learner, no replay."""
    env = device_env(settings)
    shape = (settings.num_envs, env.action_size)

    def chunk(carry: tuple[Any, jax.Array]) -> tuple[Any, jax.Array]:
        def one(c: tuple[Any, jax.Array], _: None) -> tuple[tuple[Any, jax.Array], None]:
            state, key = c
            key, action_key = jax.random.split(key)
            action = jax.random.uniform(action_key, shape, minval=-1.0, maxval=1.0)
            return (env.step(state, action)[0], key), None

        return jax.lax.scan(one, carry, None, settings.iterations_per_chunk)[0]

    step_chunk = jax.jit(chunk, donate_argnums=0)
    state = {"carry": (env.reset(jax.random.key(0), settings.num_envs), jax.random.key(1))}

    def step() -> Any:
        state["carry"] = step_chunk(state["carry"])
        return state["carry"]

    result = timing.time_steps(step, 1, settings.num_blocks, settings.warmup_chunks)
    return {
        "env_steps_per_second": result.per_second()
        * settings.iterations_per_chunk
        * settings.num_envs,
        "compile_seconds": result.first_call_seconds,
    }


def bench_host_physics(settings: BenchSettings, seed: int = 0) -> float:
    """Environment steps per second of one dm_control environment (C MuJoCo) alone,
    stepped by uniform random actions through our adapter, resets included."""
    import numpy as np

    from jax_rl.envs.dm_control import DMControlEnv

    env = DMControlEnv(settings.domain_name, settings.task_name, seed=seed)
    rng = np.random.default_rng(seed)
    env.reset()

    def step() -> None:
        if env.step(rng.uniform(-1.0, 1.0, env.action_size).astype(np.float32)).last:
            env.reset()

    blocks = settings.num_blocks
    result = timing.time_steps(step, settings.steps_per_block, blocks, settings.warmup_steps)
    return result.per_second()


def bench_device_chunk(
    name: str,
    settings: DeviceBenchSettings,
    seed: int = 0,
    label: str = "",
    num_agents: int = 1,
    **overrides: Any,
) -> dict[str, Any]:
    """Environment steps and updates per second of the Brax pipeline's train_chunk, for
    `num_agents` agents (seeds seed, seed+1, ...) trained together; the rates count all
    agents' steps and updates."""
    algo = algos.get(name)
    config = algo.Config(hidden_sizes=settings.hidden_sizes, **overrides)
    env = device_env(settings)
    chunk_steps = settings.iterations_per_chunk * settings.num_envs
    loop = device.DeviceLoopConfig(
        max_timesteps=chunk_steps * (settings.num_blocks + settings.warmup_chunks + 2),
        num_envs=settings.num_envs,
        updates_per_step=settings.updates_per_step,
        batch_size=settings.batch_size,
        start_timesteps=max(settings.batch_size, settings.num_envs),  # learn almost at once
        log_freq=chunk_steps,
        seed=seed,
    )
    pipeline = device.make_pipeline(algo, env, loop)
    keys, _ = device.agent_keys(range(seed, seed + num_agents))
    carry = device.init_population(algo, [config] * num_agents, env, loop, keys)
    start = time.perf_counter()
    carry = jax.block_until_ready(pipeline.train_chunk(carry))
    compile_seconds = time.perf_counter() - start  # first call to first result
    # Fill past the warm-up so that every timed iteration updates.
    while int(carry.env_steps) < loop.start_timesteps:
        carry = pipeline.train_chunk(carry)
    state = {"carry": carry}

    def step() -> device.Carry:
        state["carry"] = pipeline.train_chunk(state["carry"])
        return state["carry"]

    result = timing.time_steps(step, 1, settings.num_blocks, settings.warmup_chunks)
    seconds = statistics.median(result.block_seconds)
    updates = settings.iterations_per_chunk * settings.updates_per_step * num_agents
    carry = population.index_agent(state["carry"], device.carry_axes(state["carry"]), 0)
    batch = jax.tree_util.tree_map(lambda x: x[: settings.batch_size], carry.replay.data)
    flops = timing.compiled_flops(jax.jit(algo.update), carry.agent, batch, jax.random.key(0))
    return {
        "policy": label or name,
        "num_agents": num_agents,
        "env": settings.env,
        "backend": settings.backend,
        "num_envs": settings.num_envs,
        "updates_per_step": settings.updates_per_step,
        "env_steps_per_second": chunk_steps * num_agents / seconds,
        "seconds_per_chunk": seconds,
        "updates_per_second": updates / seconds,
        "replay_ratio": settings.updates_per_step * settings.batch_size / settings.num_envs,
        "compile_seconds": compile_seconds,
        "flops_per_update": flops,
        "achieved_flops_per_second": flops * updates / seconds if flops else None,
        "blocks": list(result.block_seconds),
    }


def device_markdown(
    rows: list[dict[str, Any]],
    settings: DeviceBenchSettings,
    matmul: float,
    info: dict[str, Any],
) -> str:
    lines = [
        f"# Brax pipeline: {settings.env} ({settings.backend}), {settings.num_envs} envs, "
        f"{settings.updates_per_step} updates per iteration, batch {settings.batch_size}, "
        f"{'-'.join(map(str, settings.hidden_sizes))} networks",
        "",
        f"Machine: {info['cpu']}, {info['cores']} cores, accelerator {info['accelerator']}, "
        f"JAX {info['jax']}; float32 matmul rate {matmul / 1e9:.0f} GFLOP/s.",
        "",
        "| policy | env steps/s | updates/s | compile (s) | GFLOP / update "
        "| achieved GFLOP/s | of matmul rate |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        achieved = r["achieved_flops_per_second"]
        flops_cells = (
            f"{r['flops_per_update'] / 1e9:.3f} | {achieved / 1e9:.0f} | {achieved / matmul:.0%}"
            if achieved
            else "n/a | n/a | n/a"
        )
        lines.append(
            f"| {r['policy']} | {r['env_steps_per_second']:.0f} | {r['updates_per_second']:.0f} "
            f"| {r['compile_seconds']:.1f} | {flops_cells} |"
        )
    lines += [
        "",
        "Median over timed chunks of the jitted, donated train_chunk (acting, physics, replay "
        "insertion, sampling and the updates), compilation timed apart.",
        "",
    ]
    return "\n".join(lines)


def population_markdown(
    rows: list[dict[str, Any]], settings: DeviceBenchSettings, info: dict[str, Any]
) -> str:
    """The cost of training N agents together, against one."""
    one = next(r for r in rows if r["num_agents"] == 1)
    lines = [
        f"# Populations on the device pipeline: {rows[0]['policy']}, {settings.env} "
        f"({settings.backend}), {settings.num_envs} envs x {settings.updates_per_step} updates "
        f"per iteration per agent, batch {settings.batch_size}",
        "",
        f"Machine: {info['cpu']}, {info['cores']} cores, accelerator {info['accelerator']}, "
        f"JAX {info['jax']}.",
        "",
        "| agents N | s per chunk (median) | cost / cost of 1 agent | agent-chunks per s "
        "| env steps/s (all agents) | updates/s (all agents) | compile (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        seconds = r["seconds_per_chunk"]
        lines.append(
            f"| {r['num_agents']} | {seconds:.3f} | {seconds / one['seconds_per_chunk']:.2f}x "
            f"| {r['num_agents'] / seconds:.2f} | {r['env_steps_per_second']:.0f} "
            f"| {r['updates_per_second']:.0f} | {r['compile_seconds']:.1f} |"
        )
    lines += [
        "",
        f"A chunk is {settings.iterations_per_chunk} iterations of every agent (acting, physics, "
        "replay insertion, sampling, updates) in one jitted, donated call; N agents are one "
        "vmapped program. Median over timed chunks, compilation timed apart. "
        "Cost / cost of 1 agent below N means the agents share the machine better than N "
        "separate runs would.",
        "",
    ]
    return "\n".join(lines)


def host_population_markdown(
    rows: list[dict[str, Any]], info: dict[str, Any], settings: BenchSettings
) -> str:
    """The host loop's cost of P agents trained together (vmapped, mapped), against one."""
    size = max(r["num_agents"] for r in rows)
    lines = [
        f"# Host loop: populations of {size} agents against one ({settings.domain_name}-"
        f"{settings.task_name}, batch {settings.batch_size}, "
        f"{'-'.join(map(str, settings.hidden_sizes))} networks)",
        "",
        f"Machine: {info['cpu']}, {info['cores']} cores, accelerator {info['accelerator']}, "
        f"JAX {info['jax']}. Regenerate: `python -m jax_rl.tools.benchmark --host_population "
        f"{size}` (nothing else running).",
        "",
        "| row | s / 1000 steps, all agents (median) | mean ± std | cost / cost of 1 agent "
        "| s / 1000 steps per agent | compile (s) |",
        "|---|---|---|---|---|---|",
    ]
    one = None
    for r in rows:
        median = r["seconds_per_1000_median"]
        if r["num_agents"] == 1:
            one = median
        ratio = f"{median / one:.2f}x" if one else "n/a"
        lines.append(
            f"| {r['policy']} | {median:.2f} | {r['seconds_per_1000_mean']:.2f} ± "
            f"{r['seconds_per_1000_std']:.2f} | {ratio} | {median / r['num_agents']:.2f} "
            f"| {r['compile_seconds']:.1f} |"
        )
    lines += [
        "",
        "A step is every agent's: P dm_control environments stepped on the host and one "
        "jitted call that inserts, samples and updates all P agents (`--population_loop`: "
        "vmap, one batched program; map, one agent after another inside the same program). "
        "Cost / cost of 1 agent at most P means the population costs no more than P "
        "separate runs one after another. `--population_loop auto` (the default) maps "
        "BatchRenorm networks (`--crossq`) on a CPU and vmaps the rest.",
        "",
    ]
    return "\n".join(lines)


def playground_markdown(
    rows: list[dict[str, Any]], device: DeviceBenchSettings, host: BenchSettings, info: dict
) -> str:
    """The same DM Control tasks on both loops."""
    lines = [
        "# DM Control tasks on both loops: MuJoCo Playground (MJX) on the device pipeline, "
        "dm_control (C MuJoCo) on the host loop",
        "",
        f"Machine: {info['cpu']}, {info['cores']} cores, accelerator {info['accelerator']}, "
        f"JAX {info['jax']}; load average {info['load_average']} when it started.",
        "",
        "| task | learner | loop | physics alone: env steps/s | training: env steps/s "
        "| updates/s | compile (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['task']} | {r['policy']} | {r['loop']} "
            f"| {r['physics_env_steps_per_second']:.0f} | {r['env_steps_per_second']:.0f} "
            f"| {r['updates_per_second']:.0f} | {r['compile_seconds']:.1f} |"
        )
    lines += [
        "",
        f"Device pipeline: {device.num_envs} envs x {device.updates_per_step} updates per "
        f"iteration, batch {device.batch_size}, {'-'.join(map(str, device.hidden_sizes))} "
        f"networks; a chunk of {device.iterations_per_chunk} iterations (acting, MJX physics "
        "with resets, replay, sampling, updates) in one jitted call; physics alone is the "
        "same batched environment in a jitted scan without the learner. Host loop: one "
        f"dm_control step and one update of batch {host.batch_size} per training step "
        "(`bench_host_step`); physics alone is one dm_control environment stepped from Python. "
        "Medians over timed blocks, compilation apart.",
        "",
    ]
    return "\n".join(lines)


def recipe_markdown(
    rows: list[dict[str, Any]], info: dict[str, Any], settings: BenchSettings, size: int
) -> str:
    """recipe.md: `--preset recipe`'s cost per frame on the host loop, as one agent and as
    the population a results cell trains, against `--preset auto` (the `*` entry)."""
    lines = [
        f"# Host loop: the one recipe's cost per frame ({settings.domain_name}-"
        f"{settings.task_name}, batch {settings.batch_size})",
        "",
        f"Machine: {info['cpu']}, {info['cores']} cores, accelerator {info['accelerator']}, "
        f"JAX {info['jax']}. Regenerate: `python -m jax_rl.tools.benchmark --recipe {size} "
        "--policies SAC` (part of `make bench`; nothing else running). Median of "
        f"{settings.num_blocks} blocks of {settings.steps_per_block} steps after "
        f"{settings.warmup_steps} untimed ones.",
        "",
        "| row | s / 1000 frames, all agents (median) | mean ± std | x auto per frame "
        "| x the recipe's 1 agent | s / 1000 frames per agent | updates / frame "
        "| 100k frames (min) | compile (s) | GFLOP / update |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    auto = one = None
    for r in rows:
        median, agents = r["seconds_per_1000_median"], r["num_agents"]
        if "--preset auto" in r["policy"]:
            auto = median
        elif agents == 1:
            one = median
        per_agent = median / agents
        flops = r["flops_per_update"]
        lines.append(
            f"| {r['policy']} | {median:.2f} | {r['seconds_per_1000_mean']:.2f} ± "
            f"{r['seconds_per_1000_std']:.2f} | "
            f"{f'{per_agent / auto:.2f}x' if auto else 'n/a'} | "
            f"{f'{median / one:.2f}x' if one and 'recipe' in r['policy'] else 'n/a'} | "
            f"{per_agent:.2f} | {r['updates_per_step'] / r['action_repeat']:g} | "
            f"{median * 100 / 60:.0f} | {r['compile_seconds']:.1f} | "
            f"{f'{flops / 1e9:.3f}' if flops else 'n/a'} |"
        )
    lines += [
        "",
        "A step is every agent's: P dm_control environments stepped on the host, each "
        "decision held for `action_repeat` frames, and one jitted call making "
        "`updates_per_step` updates of every agent; every figure is per 1000 frames, as a "
        "run counts its steps. *x auto per frame* is one agent's cost per frame against the "
        "`*` entry's: the cost rule of issue 97 allows 2x (docs/recipe.md). *x the "
        "recipe's 1 agent* at most P means the population costs no more than P runs of one "
        "agent one after another. *100k frames* is a results cell's training alone (a "
        "dm_control table cell: `python -m jax_rl.tools.results --suite dmc28 --preset "
        "recipe`), without its 20 evaluations of 10 episodes.",
    ]
    return "\n".join(lines) + "\n"


def markdown(
    rows: list[dict[str, Any]], info: dict[str, Any], settings: BenchSettings, matmul: float
) -> str:
    lines = [
        f"# Host loop: seconds per 1000 training steps ({settings.domain_name}-"
        f"{settings.task_name}, batch {settings.batch_size}, "
        f"{'-'.join(map(str, settings.hidden_sizes))} networks)",
        "",
        f"Machine: {info['cpu']}, {info['cores']} cores, accelerator {info['accelerator']}, "
        f"JAX {info['jax']}. Large-matmul rate measured in the same run: "
        f"{matmul / 1e9:.0f} GFLOP/s.",
        "",
        "| policy | s / 1000 steps (median) | mean ± std | x SAC | compile (s) "
        "| GFLOP / update | achieved GFLOP/s | of matmul rate |",
        "|---|---|---|---|---|---|---|---|",
    ]
    sac = next((r["seconds_per_1000_median"] for r in rows if r["policy"] == "SAC"), None)
    for r in rows:
        median = r["seconds_per_1000_median"]
        flops, achieved = r["flops_per_update"], r["achieved_flops_per_second"]
        flops_cells = (
            f"{flops / 1e9:.3f} | {achieved / 1e9:.0f} | {achieved / matmul:.0%}"
            if flops and achieved
            else "n/a | n/a | n/a"
        )
        lines.append(
            f"| {r['policy']} | {median:.2f} | {r['seconds_per_1000_mean']:.2f} ± "
            f"{r['seconds_per_1000_std']:.2f} | {median / sac:.2f} | "
            if sac
            else f"| {r['policy']} | {median:.2f} | {r['seconds_per_1000_mean']:.2f} ± "
            f"{r['seconds_per_1000_std']:.2f} | n/a | "
        )
        lines[-1] += f"{r['compile_seconds']:.1f} | {flops_cells} |"
    lines.append("")
    for r in rows:
        if r.get("scipy_solve_seconds"):
            per_step = r["seconds_per_1000_median"] / 1000
            lines.append(
                f"{r['policy']}: the host SLSQP solve of the temperature takes "
                f"{r['scipy_solve_seconds'] * 1e3:.2f} ms per update, "
                f"{r['scipy_solve_seconds'] / per_step:.0%} of its training step."
            )
    if any(r["policy"] == MRQ_LABEL for r in rows):
        lines.append(
            f"{MRQ_LABEL}: the settings of `--preset mrq` (jax_rl/presets/td3.toml) at one "
            "update per environment step, timed over "
            f"{MRQ_TIMING['num_blocks']} blocks of {MRQ_TIMING['steps_per_block']} steps "
            "(its update is ~23x TD3's); per 1000 steps like the rest."
        )
    if any(r["policy"] == MPO_RETURNS_LABEL for r in rows):
        settings_text = ", ".join(f"{k} {v}" for k, v in MPO_RETURNS_OVERRIDES.items())
        lines += [
            "",
            f"{MPO_RETURNS_LABEL}: {settings_text}, the configuration of `make mpo-returns` "
            "that reaches 800 on cartpole-swingup in 100,000 steps.",
        ]
    lines += [
        "",
        "A training step is one environment step plus one jitted call (insert, sample, one "
        "update, next action). With action repeat K a step holds its decision for K frames "
        "(`--action_repeat`): those rows are seconds per 1000 frames, as every step count of "
        "a run is, with one update per K frames. FLOPs come from XLA's cost analysis of one "
        "update; for TD3 both branches of the delayed actor update are counted, so its "
        "figure is an upper bound.",
        "",
    ]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, same code path")
    parser.add_argument(
        "--policies", default=",".join(algos.ALGORITHMS), help="comma-separated learners to time"
    )
    parser.add_argument(
        "--out",
        default=None,
        help="folder for the tables (default docs/benchmarks; with --quick a temporary folder)",
    )
    parser.add_argument("--skip_brax", action="store_true", help="time the host loop only")
    parser.add_argument(
        "--critics",
        action="store_true",
        help="only time TD3 and SAC (of --policies) with CrossQ, SimBa and SimbaV2 critics on "
        "the host loop, at CPU and published widths; writes critics.md",
    )
    parser.add_argument(
        "--skip_host",
        action="store_true",
        help="time the Brax pipeline only (needs no dm_control, e.g. on a GPU machine)",
    )
    for flag, help_text in DEVICE_SIZE_FLAGS.items():
        parser.add_argument(f"--{flag}", type=int, default=None, metavar="N", help=help_text)
    parser.add_argument(
        "--playground",
        default=None,
        metavar="TASK,TASK,...",
        help="only time these MuJoCo Playground DM Control tasks (e.g. CartpoleSwingup,"
        "CheetahRun) on the device pipeline, beside the same tasks on the host loop (dm_control); "
        "writes playground.md",
    )
    parser.add_argument(
        "--host_population",
        type=int,
        default=None,
        metavar="P",
        help="only time the host loop's populations: each of --policies (TD3, SAC) plain and "
        "with its CrossQ entry, as 1 agent and as P agents vmapped and mapped; writes "
        "host_population.md",
    )
    parser.add_argument(
        "--recipe",
        type=int,
        default=None,
        metavar="P",
        help="only time `--preset recipe` on the host loop (dm_control, per 1000 frames) as 1 "
        "agent and as P agents, beside `--preset auto`, for each of --policies that has a "
        "recipe; writes recipe.md",
    )
    parser.add_argument(
        "--population",
        default=None,
        metavar="N,N,...",
        help="only time populations of these sizes on the Brax pipeline (first policy of "
        "--policies), e.g. 1,4,16, on halfcheetah or on the one task --playground names; "
        "writes population.md",
    )
    return parser.parse_args(argv)


DEVICE_SIZE_FLAGS = {
    "num_envs": "Brax pipeline: environments per agent",
    "updates_per_step": "Brax pipeline: updates per iteration (k)",
    "batch_size": "Brax pipeline: batch size",
    "iterations_per_chunk": "Brax pipeline: iterations per timed chunk",
}


def has_recipe(policy: str) -> bool:
    """Whether learner `policy`'s preset file has a `--preset recipe`."""
    return "recipe" in presets.named_choices(presets.load_file(policy)["named"])


def check_args(args: argparse.Namespace) -> str | None:
    """What is wrong with the flags, in one line, or None."""
    for name in args.policies.split(","):
        if name and name not in algos.ALGORITHMS:
            return f"unknown policy {name!r}; choose from {', '.join(algos.ALGORITHMS)}"
    if args.skip_host and args.skip_brax:
        return "--skip_host and --skip_brax leave nothing to time"
    sizes = device_sizes(args)
    if any(v < 1 for v in sizes.values()):
        return f"Brax pipeline sizes must be positive, got {sizes}"
    if args.host_population is not None and args.host_population < 2:
        return f"--host_population must be at least 2, got {args.host_population}"
    if args.host_population and any(n not in CROSSQ_LEARNERS for n in args.policies.split(",")):
        return f"--host_population times {' and '.join(CROSSQ_LEARNERS)}: give --policies TD3,SAC"
    if args.recipe is not None:
        if args.host_population is not None:
            return "--recipe and --host_population are two tables: give one of them"
        if args.recipe < 2:
            return f"--recipe must be at least 2, got {args.recipe}"
        without = [n for n in args.policies.split(",") if n and not has_recipe(n)]
        if without:
            have = [n for n in algos.ALGORITHMS if has_recipe(n)]
            return (
                f"--recipe: {', '.join(without)} has no --preset recipe yet; learners with one: "
                f"{', '.join(have) or 'none'} (give --policies {','.join(have)})"
            )
    if args.population and args.playground and "," in args.playground.strip(","):
        return "--population times one task: give --playground a single task"
    return None


def device_sizes(args: argparse.Namespace) -> dict[str, Any]:
    """The Brax pipeline sizes given on the command line."""
    return {f: getattr(args, f) for f in DEVICE_SIZE_FLAGS if getattr(args, f) is not None}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    problem = check_args(args)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if args.out is None:  # tiny sizes never replace the committed tables
        args.out = scratch_folder("bench", "--quick") if args.quick else "docs/benchmarks"
    names = [n for n in args.policies.split(",") if n]
    device_settings = dataclasses.replace(
        QUICK_DEVICE if args.quick else DeviceBenchSettings(), **device_sizes(args)
    )
    info = machine()
    if args.population:
        if args.playground:  # the population's task is a Playground one, with its defaults
            task = args.playground.strip(",")
            problem = _unknown_playground_task([task])
            if problem:
                print(f"error: {problem}", file=sys.stderr)
                return 2
            device_settings = _playground_settings(args, task)[0]
        return _bench_population(args, names[0], info, device_settings)
    if args.host_population:
        return _bench_host_population(args, names, info)
    if args.recipe:
        return _bench_recipe(args, names, info)
    if args.playground:
        return _bench_playground(args, names, info)
    if args.critics:
        return _bench_critics(args, names, info)
    if args.quick:
        matmul = timing.matmul_rate(256, repeats=3)
    else:  # an accelerator needs a larger product to reach its rate
        matmul = timing.matmul_rate(2048 if info["accelerator"] == "none" else 8192)
    if not args.skip_host:
        _bench_host(args, names, info, matmul)
    if not args.skip_brax:
        _bench_device(args, names, info, matmul, device_settings)
    return 0


def _bench_host(
    args: argparse.Namespace,
    names: list[str],
    info: dict[str, Any],
    matmul: float,
    stem: str = "host",
    rows_of: Callable[[str], list[tuple[str, dict[str, Any]]]] = variants,
    settings: BenchSettings | None = None,
) -> None:
    """<stem>.md: seconds per 1000 host-loop steps of each learner's rows (`rows_of`)."""
    settings = QUICK if args.quick else (settings or BenchSettings())
    rows = []
    for name in names:
        for label, overrides in rows_of(name):
            print(f"timing {label} ...", file=sys.stderr, flush=True)
            overrides = quick_sized(overrides) if args.quick else overrides
            timed = settings
            if label == MRQ_LABEL and not args.quick:
                timed = dataclasses.replace(
                    settings,
                    steps_per_block=MRQ_TIMING["steps_per_block"],
                    num_blocks=MRQ_TIMING["num_blocks"],
                    warmup_steps=MRQ_TIMING["warmup_steps"],
                )
            rows.append(bench_host_step(name, timed, label=label, **overrides))
    payload = {
        "machine": info,
        "settings": dataclasses.asdict(settings),
        "matmul_flops_per_second": matmul,
        "host_loop": rows,
    }
    table = markdown(rows, info, settings, matmul)
    if stem == "host" and any(n in REPRESENTATION_ROWS for n in names):
        sizes = (1_000, 10_000) if args.quick else (100_000, 1_000_000)
        print("timing LAP's prioritised sampling ...", file=sys.stderr, flush=True)
        lap = [time_lap_sampling(n) for n in sizes]
        payload["lap_sampling"] = lap
        table += lap_markdown(lap)
    _write(Path(args.out), stem, table, payload)


def _bench_host_population(args: argparse.Namespace, names: list[str], info: dict[str, Any]) -> int:
    """host_population.md: P agents on the host loop, vmapped and mapped, against one."""
    settings = QUICK if args.quick else BenchSettings()
    rows = []
    for name in names:
        for label, overrides in population_rows(name, args.host_population):
            print(f"timing {label} ...", file=sys.stderr, flush=True)
            rows.append(bench_host_step(name, settings, label=label, **overrides))
    payload = {"machine": info, "settings": dataclasses.asdict(settings), "host_loop": rows}
    table = host_population_markdown(rows, info, settings)
    _write(Path(args.out), "host_population", table, payload)
    return 0


def _bench_recipe(args: argparse.Namespace, names: list[str], info: dict[str, Any]) -> int:
    """recipe.md: each learner's `--preset recipe` as 1 agent and as a population, beside
    its `--preset auto`, on the host loop."""
    settings = QUICK if args.quick else RECIPE_SETTINGS
    rows = []
    for name in names:
        for label, overrides in recipe_rows(name, args.recipe):
            print(f"timing {label} ...", file=sys.stderr, flush=True)
            overrides = quick_sized(overrides) if args.quick else overrides
            rows.append(bench_host_step(name, settings, label=label, **overrides))
    payload = {"machine": info, "settings": dataclasses.asdict(settings), "host_loop": rows}
    _write(Path(args.out), "recipe", recipe_markdown(rows, info, settings, args.recipe), payload)
    return 0


def lap_markdown(rows: list[dict[str, float]]) -> str:
    """The LAP sampling table under the host table."""
    lines = [
        "",
        "## LAP: milliseconds per batch of 256 rows drawn by priority",
        "",
        "A full buffer; two levels of cumulative sums, over blocks of ~sqrt(rows / 256) rows "
        "and inside the drawn blocks (`jax_rl.core.replay.sample_rows`), against the uniform "
        "draw. Median of 200 jitted calls.",
        "",
        "| rows | by priority (ms) | uniform (ms) |",
        "|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['capacity']:,} | {r['prioritized_ms']:.3f} | {r['uniform_ms']:.3f} |")
    return "\n".join(lines) + "\n"


def _bench_critics(args: argparse.Namespace, names: list[str], info: dict[str, Any]) -> int:
    """critics.md: seconds per 1000 host-loop steps of TD3 and SAC with each critic option."""

    def rows_of(name: str) -> list[tuple[str, dict[str, Any]]]:
        if not args.quick:
            return critic_variants(name)
        # The same code path at tiny widths.
        return [
            (label, {**o, **{k: (8,) * len(v) for k, v in o.items() if k.endswith("_sizes")}})
            for label, o in critic_variants(name)
        ]

    matmul = timing.matmul_rate(256 if args.quick else 2048, repeats=3)
    learners = [n for n in names if n in ("TD3", "SAC")]
    _bench_host(args, learners, info, matmul, "critics", rows_of, CRITIC_SETTINGS)
    return 0


def _bench_device(
    args: argparse.Namespace,
    names: list[str],
    info: dict[str, Any],
    matmul: float,
    settings: DeviceBenchSettings,
) -> None:
    """brax.md: the Brax pipeline's chunk time of each learner."""
    rows = []
    for name in names:
        # The adam solver costs what newton costs on the device; two MPO rows suffice.
        # (The returns configuration is a host-loop one: n_step belongs to that loop.)
        for label, overrides in variants(name)[:2]:
            overrides = quick_sized(overrides) if args.quick else overrides
            print(f"timing the Brax pipeline with {label} ...", file=sys.stderr, flush=True)
            rows.append(bench_device_chunk(name, settings, label=label, **overrides))
    payload = {
        "machine": info,
        "settings": dataclasses.asdict(settings),
        "matmul_flops_per_second": matmul,
        "device_pipeline": rows,
    }
    _write(Path(args.out), "brax", device_markdown(rows, settings, matmul, info), payload)


def _bench_population(
    args: argparse.Namespace, name: str, info: dict[str, Any], settings: DeviceBenchSettings
) -> int:
    try:
        sizes = [int(n) for n in args.population.split(",")]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1 or 1 not in sizes:
        print("error: --population wants positive sizes including 1, e.g. 1,4,16", file=sys.stderr)
        return 2
    rows = []
    for n in sizes:
        print(f"timing {n} {name} agent(s) on the device pipeline ...", file=sys.stderr, flush=True)
        rows.append(bench_device_chunk(name, settings, num_agents=n))
    _write(
        Path(args.out),
        "population",
        population_markdown(rows, settings, info),
        {"machine": info, "settings": dataclasses.asdict(settings), "population": rows},
    )
    return 0


def _playground_settings(
    args: argparse.Namespace, task: str
) -> tuple[DeviceBenchSettings, BenchSettings]:
    """Device and host settings for one Playground task: the task's loop defaults
    (envs.playground.task_defaults) unless --quick or the size flags say otherwise."""
    from jax_rl.envs import playground

    defaults = playground.task_defaults(task)
    sizes: dict[str, Any] = {}
    if not args.quick:
        sizes = {"num_envs": defaults.num_envs, "updates_per_step": defaults.updates_per_step}
    device_settings = dataclasses.replace(
        QUICK_DEVICE if args.quick else DeviceBenchSettings(),
        env=task,
        backend=playground.DEFAULT_IMPL,
        **{**sizes, **device_sizes(args)},
    )
    domain, task_name = playground.DM_CONTROL_TASKS[task]
    host_settings = dataclasses.replace(
        QUICK if args.quick else BenchSettings(), domain_name=domain, task_name=task_name
    )
    return device_settings, host_settings


def _bench_playground(args: argparse.Namespace, names: list[str], info: dict[str, Any]) -> int:
    """playground.md: each task's physics and training rates on both loops."""

    tasks = [t for t in args.playground.split(",") if t]
    problem = _unknown_playground_task(tasks)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    info = {**info, "load_average": ", ".join(f"{x:.1f}" for x in os.getloadavg())}
    rows: list[dict[str, Any]] = []
    settings: dict[str, Any] = {}
    for task in tasks:
        device_settings, host_settings = _playground_settings(args, task)
        settings[task] = {
            "device": dataclasses.asdict(device_settings),
            "host": dataclasses.asdict(host_settings),
        }
        rows += _playground_rows(task, names, device_settings, host_settings)
    table = playground_markdown(rows, device_settings, host_settings, info)
    payload = {"machine": info, "settings": settings, "playground": rows}
    _write(Path(args.out), "playground", table, payload)
    return 0


def _unknown_playground_task(tasks: list[str]) -> str | None:
    """The registry's complaint about the first task it does not know, or None."""
    from jax_rl.envs import UnknownEnvironmentError, playground

    try:
        for task in tasks:
            playground.check_environment(task)
    except UnknownEnvironmentError as e:
        return str(e)
    return None


def _playground_rows(
    task: str, names: list[str], device_settings: DeviceBenchSettings, host_settings: BenchSettings
) -> list[dict[str, Any]]:
    """Two rows per learner: the device pipeline (MJX) and the host loop (C MuJoCo)."""
    print(f"timing {task}: physics alone ...", file=sys.stderr, flush=True)
    physics = bench_device_physics(device_settings)
    host_physics = bench_host_physics(host_settings)
    rows = []
    for name in names:
        label, overrides = _playground_variant(name)
        print(f"timing {task} with {label} on both loops ...", file=sys.stderr, flush=True)
        chunk = bench_device_chunk(name, device_settings, label=label, **overrides)
        chunk.update(
            task=task,
            loop="device (MJX)",
            physics_env_steps_per_second=physics["env_steps_per_second"],
            physics_compile_seconds=physics["compile_seconds"],
        )
        host_step = bench_host_step(name, host_settings, label=label, **overrides)
        per_second = 1000.0 / host_step["seconds_per_1000_median"]
        host_row = {
            "task": task,
            "policy": label,
            "loop": "host (C MuJoCo)",
            "env_steps_per_second": per_second,
            "updates_per_second": per_second,  # one update per environment step
            "compile_seconds": host_step["compile_seconds"],
            "physics_env_steps_per_second": host_physics,
            "host_step": host_step,
        }
        rows += [chunk, host_row]
    return rows


def _playground_variant(name: str) -> tuple[str, dict[str, Any]]:
    """One row per learner; MPO with the in-graph Newton solver (no host round trip)."""
    return ("MPO (newton)", {"dual_solver": "newton"}) if name == "MPO" else (name, {})


def _write(out: Path, stem: str, table: str, payload: dict[str, Any]) -> None:
    """Print a table and write it as <stem>.md, with its figures as <stem>.json."""
    print(table)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.md").write_text(table)
    (out / f"{stem}.json").write_text(json.dumps(payload, indent=2))


if __name__ == "__main__":
    from jax_rl.io import quiet

    quiet.install()  # as the entry points do (not in `main`: tests call it in-process)
    sys.exit(main())
