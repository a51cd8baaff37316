"""Populations on the host loop: P environments stepped on the host, one vmapped call.

Agent i gets an environment of its own; here agent 0 a Countdown (episodes of 5
steps, ended by the time limit) and agent 1 a contextual bandit (one-step
episodes, a reward that depends on the action), so the agents' episodes end at
different steps and their data differ.
"""

import json
import math
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from jax_rl.algos import mpo, sac, td3
from jax_rl.core import population
from jax_rl.core.transition import Transition
from jax_rl.envs.probes import ContextualBandit, Countdown
from jax_rl.io.logger import PopulationLogger
from jax_rl.loops import host
from jax_rl.loops.common import NonFiniteError

ROOT = Path(__file__).resolve().parents[2]
LOOP = dict(
    max_timesteps=60,
    start_timesteps=20,
    batch_size=8,
    eval_freq=30,
    eval_episodes=2,
    log_freq=10,
)
HIDDEN = (16, 16)
ALGOS = {"TD3": td3, "SAC": sac, "MPO": mpo}


def make_env(seed: int, evaluation: bool = False):
    """Agent with seed 0: a Countdown; others: a bandit seeded by the agent's seed."""
    if seed == 0:
        return Countdown(time_limit=5)
    return ContextualBandit(obs_size=2, action_size=1, seed=seed + (100 if evaluation else 0))


def train(algo, configs, seeds, out: Path, **loop):
    config = host.HostLoopConfig(**{**LOOP, **loop})
    dirs = [out] if len(seeds) == 1 else [out / f"agent{i}" for i in range(len(seeds))]
    logger = PopulationLogger.create(out, dirs, config.max_timesteps, progress=False)
    try:
        return host.train_population(
            algo,
            configs,
            seeds,
            [make_env(s) for s in seeds],
            [make_env(s, evaluation=True) for s in seeds],
            config,
            logger,
        )
    finally:
        logger.close()


def assert_close(a, b):
    leaves_a, leaves_b = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(leaves_a) == len(leaves_b)
    for x, y in zip(leaves_a, leaves_b, strict=True):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            x, y = jax.random.key_data(x), jax.random.key_data(y)
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-4, atol=1e-5)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """name -> (agents, the population's result, one separate result per agent)."""
    out = {}
    for name, algo in ALGOS.items():
        sweep = {"tau": [0.005, 0.05]} if name == "SAC" else {}
        agents = population.expand(0, 2, sweep)
        base = algo.Config(hidden_sizes=HIDDEN)
        configs = [base.replace(**dict(a.values)) for a in agents]
        seeds = [a.seed for a in agents]
        together = train(algo, configs, seeds, tmp_path_factory.mktemp(f"{name}-population"))
        alone = [
            train(algo, [c], [s], tmp_path_factory.mktemp(f"{name}-alone"))
            for c, s in zip(configs, seeds, strict=True)
        ]
        out[name] = (agents, together, alone)
    return out


@pytest.mark.parametrize("name", list(ALGOS))
def test_vmapped_agents_train_as_separate_runs_with_their_seeds(runs, name):
    agents, together, alone = runs[name]
    assert len(together.evaluations) == len(agents)
    for i, single in enumerate(alone):
        mine, other = together.agent(i), single.agent(0)
        # Parameters, targets, optimizer states, duals, keys, replay contents.
        assert_close(mine.agent, other.agent)
        assert_close(mine.key, other.key)
        assert_close(mine.replay.data, other.replay.data)
        returns = [r["return_mean"] for r in together.evaluations[i]]
        expected = [r["return_mean"] for r in single.evaluations[0]]
        np.testing.assert_allclose(returns, expected, rtol=1e-4)
    # The two seeds' environments differ: agent 0 saw Countdown rewards of 1 only.
    rewards = [np.asarray(together.agent(i).replay.data.reward) for i in (0, 1)]
    np.testing.assert_array_equal(rewards[0], 1.0)
    assert (rewards[1] < 0).all()


def test_counters_are_shared_and_the_step_compiles_once(runs):
    _, together, _ = runs["TD3"]
    learner = together.learner
    assert learner.replay.size.shape == () and learner.agent.step.shape == ()
    assert learner.key.shape == (2,) and learner.replay.data.obs.shape[0] == 2
    assert int(learner.replay.size) == LOOP["max_timesteps"]
    fns = together.step_functions
    assert fns.learn._cache_size() == 1 and fns.collect._cache_size() == 1
    # TD3's delayed actor update stays a branch: the shared step counts every update once.
    assert int(learner.agent.step) == LOOP["max_timesteps"] - LOOP["start_timesteps"] + 1


def test_the_step_writes_and_samples_the_buffers_in_place():
    """The compiled learn step holds no copy of a replay buffer, so its cost does not grow
    with the capacity. (A vmapped per-agent sample made XLA fuse the insert into the
    gather and copy every buffer each step: 27 ms a step at capacity 1M against 6 ms
    at 10k, for two agents.)"""
    num_agents, capacity, obs_size = 3, 65_536, 3
    learner = host.init_population(
        td3, [td3.Config(hidden_sizes=HIDDEN)] * num_agents, range(num_agents),
        obs_size, 1, capacity, 8,
    )  # fmt: skip
    obs = np.zeros((num_agents, obs_size), np.float32)
    ones = np.ones(num_agents, np.float32)
    rows = Transition(obs, np.zeros((num_agents, 1), np.float32), ones, ones, obs)
    fns = host.make_step_functions(td3, 8)
    for step in (fns.learn, fns.collect):
        args = (learner, rows, obs) if step is fns.learn else (learner, rows)
        text = step.lower(*args).compile().as_text()
        copies = [
            line for line in text.splitlines()
            if " copy(" in line and f",{capacity}" in line.split("copy(")[0]
        ]  # fmt: skip
        assert copies == []


def test_sweep_values_reach_their_agents(runs):
    agents, together, _ = runs["SAC"]
    assert [(a.seed, dict(a.values)["tau"]) for a in agents] == [
        (0, 0.005), (1, 0.005), (0, 0.05), (1, 0.05),
    ]  # fmt: skip
    taus = np.asarray(together.learner.agent.config.tau)
    np.testing.assert_allclose(taus, [0.005, 0.005, 0.05, 0.05])


def test_a_diverging_agent_is_reported_and_the_others_go_on(tmp_path):
    configs = [td3.Config(hidden_sizes=HIDDEN), td3.Config(hidden_sizes=HIDDEN, actor_lr=1e30,
                                                           critic_lr=1e30)]  # fmt: skip
    result = train(td3, configs, [0, 1], tmp_path)
    healthy, broken = result.evaluations
    assert all(math.isfinite(r["return_mean"]) for r in healthy)
    assert math.isnan(broken[-1]["return_mean"])
    assert np.isfinite(np.asarray(result.agent(0).replay.data.action)).all()
    # Its environment went on with neutral actions, never NaN ones.
    assert np.isfinite(np.asarray(result.agent(1).replay.data.action)).all()


def test_every_agent_diverging_stops_the_run(tmp_path):
    config = td3.Config(hidden_sizes=HIDDEN, actor_lr=1e30, critic_lr=1e30)
    with pytest.raises(NonFiniteError, match="every agent"):
        train(td3, [config, config], [0, 1], tmp_path)


def test_entry_point_trains_a_seed_sweep_and_ranks_it(tmp_path):
    out = tmp_path / "run"
    result = subprocess.run(
        [
            sys.executable, str(ROOT / "jax_rl" / "main_dm_control.py"), "--policy", "SAC",
            "--preset", "paper", "--num_seeds", "2", "--tau", "0.005,0.05",
            "--max_timesteps", "200",
            "--start_timesteps", "100", "--batch_size", "32", "--hidden_sizes", "16",
            "--eval_freq", "100", "--eval_episodes", "1", "--log_freq", "100",
            "--no_progress", "--save_dir", str(out),
        ],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    folders = sorted(p.name for p in out.iterdir() if p.is_dir() and p.name != "checkpoints")
    assert folders == [
        "SAC-tau=0.005-seed0", "SAC-tau=0.005-seed1", "SAC-tau=0.05-seed0", "SAC-tau=0.05-seed1",
    ]  # fmt: skip
    for folder in folders:
        rows = (out / folder / "evaluations.csv").read_text().splitlines()
        assert [r.split(",")[0] for r in rows[1:]] == ["0", "100", "200"]
        config = json.loads((out / folder / "config.json").read_text())
        assert config["algo"]["tau"] == float(folder.split("=")[1].split("-")[0])
    summary = json.loads((out / "summary.json").read_text())
    assert [a["seed"] for a in summary["agents"]] == [0, 1, 0, 1]
    assert {r["setting"] for r in summary["ranking"]} == {"tau=0.005", "tau=0.05"}
    assert "| rank | SAC setting |" in (out / "ranking.md").read_text()
    assert "4 agents, 200 environment steps each" in result.stdout


@pytest.fixture(scope="module")
def mapped(runs, tmp_path_factory):
    """name -> the population of `runs` trained again with population_loop "map"."""
    out = {}
    for name in ("TD3", "SAC"):
        agents, _, _ = runs[name]
        algo = ALGOS[name]
        sweep = {"tau": [0.005, 0.05]} if name == "SAC" else {}
        configs = [algo.Config(hidden_sizes=HIDDEN).replace(**dict(a.values)) for a in agents]
        assert [a.values for a in population.expand(0, 2, sweep)] == [a.values for a in agents]
        folder = tmp_path_factory.mktemp(f"{name}-mapped")
        out[name] = train(algo, configs, [a.seed for a in agents], folder, population_loop="map")
    return out


@pytest.mark.parametrize("name", ["TD3", "SAC"])
def test_mapped_agents_train_as_separate_runs_too(runs, mapped, name):
    """One agent after another in the same program: each agent still trains exactly as a
    run of its own (parameters, keys, replay), and the counters stay shared."""
    agents, _, alone = runs[name]
    together = mapped[name]
    for i, single in enumerate(alone):
        mine, other = together.agent(i), single.agent(0)
        assert_close(mine.agent, other.agent)
        assert_close(mine.key, other.key)
        assert_close(mine.replay.data, other.replay.data)
    learner = together.learner
    assert learner.replay.size.shape == () and learner.agent.step.shape == ()
    assert together.step_functions.learn._cache_size() == 1
    if name == "TD3":  # the delayed actor update still counts every update once
        assert int(learner.agent.step) == LOOP["max_timesteps"] - LOOP["start_timesteps"] + 1


def test_auto_maps_batchrenorm_populations_on_a_cpu_and_vmaps_the_rest():
    crossq, plain = td3.Config(crossq=True), td3.Config()
    assert jax.default_backend() == "cpu"
    assert host.resolve_population_loop("auto", crossq, 3) == "map"
    assert host.resolve_population_loop("auto", sac.Config(crossq=True), 2) == "map"
    assert host.resolve_population_loop("auto", plain, 3) == "vmap"
    assert host.resolve_population_loop("auto", crossq, 1) == "vmap"
    assert host.resolve_population_loop("vmap", crossq, 3) == "vmap"
    assert host.resolve_population_loop("map", plain, 3) == "map"
    with pytest.raises(ValueError, match="population_loop must be one of auto, vmap, map"):
        host.HostLoopConfig(population_loop="scan")


@pytest.mark.parametrize(
    "parts",
    [{}, {"replay": "lap"}, {"representation": "mrq", "encoder_every": 5, "num_bins": 9}],
    ids=["uniform", "lap", "mrq-windows"],
)
def test_a_mapped_population_of_two_updates_per_step_trains_as_separate_runs(parts, tmp_path):
    """With U = 2 a mapped population makes each agent's two updates in one body of its map
    (uniform replay: both batches drawn first, windows too) or one map per update
    (prioritised replay, each draw reading the priorities the last update wrote): either
    way every agent trains as a run of its own."""
    config = sac.Config(hidden_sizes=HIDDEN).replace(**parts)
    loop = {"updates_per_step": 2}
    together = train(
        sac, [config] * 2, [0, 1], tmp_path / "population", population_loop="map", **loop
    )
    assert together.step_functions.learn._cache_size() == 1
    for i in (0, 1):
        alone = train(sac, [config], [i], tmp_path / f"alone{i}", **loop).agent(0)
        mine = together.agent(i)
        assert_close(mine.agent, alone.agent)
        assert_close(mine.key, alone.key)
        assert_close(mine.replay.data, alone.replay.data)
        if parts.get("replay") == "lap":
            assert_close(mine.replay.priority, alone.replay.priority)
    updates = 2 * (LOOP["max_timesteps"] - LOOP["start_timesteps"] + 1)
    assert int(together.learner.agent.step) == updates
