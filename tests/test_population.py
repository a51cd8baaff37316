"""Populations on the Brax pipeline: vmapped seeds and sweeps equal separate runs.

The learning runs use a point mass with Brax's environment API (compiles in
seconds); the entry-point test uses a real Brax environment.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from jax_rl.algos import mpo, sac, td3
from jax_rl.core import population
from jax_rl.envs.point_mass import point_mass_env
from jax_rl.io.logger import PopulationLogger
from jax_rl.loops import device

ROOT = Path(__file__).resolve().parent.parent
LOOP = dict(
    max_timesteps=192,
    num_envs=4,
    updates_per_step=2,
    batch_size=16,
    start_timesteps=64,
    eval_freq=96,
    eval_episodes=2,
    log_freq=64,
    episode_length=20,
)
HIDDEN = (16, 16)
SAC_TAUS = (0.005, 0.05)
ALGOS = {"TD3": td3, "SAC": sac, "MPO": mpo}


# One object for the module (compiled programs are cached per environment object). Its
# episodes end early where |x| >= 0.5, so environments (and agents) end at different steps.
POINT = point_mass_env(episode_length=LOOP["episode_length"], terminate_beyond=0.5)


def point_env():
    return POINT


def _train(algo, configs, seeds, out: Path):
    env = point_env()
    config = device.DeviceLoopConfig(**LOOP)
    dirs = [out] if len(seeds) == 1 else [out / f"agent{i}" for i in range(len(seeds))]
    logger = PopulationLogger.create(out, dirs, config.total_steps, progress=False)
    result = device.train_population(algo, configs, seeds, env, config, logger)
    logger.close()
    return result


def _agents(name: str) -> list[population.AgentSpec]:
    sweep = {"tau": list(SAC_TAUS)} if name == "SAC" else {}
    return population.expand(0, 2, sweep)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """name -> (agents, the population's result, one separate result per agent)."""
    out = {}
    for name, algo in ALGOS.items():
        agents = _agents(name)
        base = algo.Config(hidden_sizes=HIDDEN)
        configs = [base.replace(**dict(a.values)) for a in agents]
        seeds = [a.seed for a in agents]
        together = _train(algo, configs, seeds, tmp_path_factory.mktemp(f"{name}-population"))
        alone = [
            _train(algo, [c], [s], tmp_path_factory.mktemp(f"{name}-alone"))
            for c, s in zip(configs, seeds, strict=True)
        ]
        out[name] = (agents, together, alone)
    return out


def _assert_close(a, b):
    leaves_a, leaves_b = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    assert len(leaves_a) == len(leaves_b)
    for x, y in zip(leaves_a, leaves_b, strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", list(ALGOS))
def test_vmapped_agents_train_as_separate_runs_with_their_seeds(runs, name):
    agents, together, alone = runs[name]
    assert len(together.evaluations) == len(agents)
    for i, single in enumerate(alone):
        mine = together.agent(i)
        other = single.agent(0)
        # Parameters, optimizer states, duals, replay contents, environment states.
        _assert_close(mine.agent, other.agent)
        _assert_close(mine.replay.data, other.replay.data)
        _assert_close(mine.env.physics.obs, other.env.physics.obs)
        returns = [r["return_mean"] for r in together.evaluations[i]]
        expected = [r["return_mean"] for r in single.evaluations[0]]
        np.testing.assert_allclose(returns, expected, rtol=1e-4)
    # Different seeds really are different agents.
    first, second = together.agent(0), together.agent(1)
    assert not np.allclose(first.replay.data.obs, second.replay.data.obs)


def test_lock_step_counters_are_shared_and_compile_once(runs):
    _, together, _ = runs["TD3"]
    carry = together.carry
    assert carry.replay.size.shape == () and carry.agent.step.shape == ()
    assert carry.key.shape == (2,)
    assert int(carry.env_steps) == LOOP["max_timesteps"]
    assert together.pipeline.train_chunk._cache_size() == 2  # one population size, one single


def test_sweep_gives_each_agent_its_values(runs, tmp_path):
    agents, together, _ = runs["SAC"]
    assert [(a.seed, dict(a.values)["tau"]) for a in agents] == [
        (0, 0.005), (1, 0.005), (0, 0.05), (1, 0.05),
    ]  # fmt: skip
    taus = np.asarray(together.carry.agent.config.tau)
    np.testing.assert_allclose(taus, [0.005, 0.005, 0.05, 0.05])
    # And the values act: the targets of the tau = 0.05 agents moved further from
    # their initial values (targets start equal to the online networks).
    fresh = device.init_population(
        sac,
        [sac.Config(hidden_sizes=HIDDEN, tau=dict(a.values)["tau"]) for a in agents],
        point_env(),
        device.DeviceLoopConfig(**LOOP),
        device.agent_keys([a.seed for a in agents])[0],
    )

    def moved(i):
        start = population.index_agent(fresh, device.carry_axes(fresh), i).agent
        end = together.agent(i).agent
        before = jax.tree_util.tree_leaves(start.target_critic_params)
        after = jax.tree_util.tree_leaves(end.target_critic_params)
        return sum(
            float(np.abs(np.asarray(a) - np.asarray(b)).sum())
            for a, b in zip(after, before, strict=True)
        )

    assert moved(2) > 3 * moved(0) and moved(3) > 3 * moved(1)


def test_terminations_differ_between_agents(runs):
    _, together, _ = runs["TD3"]
    done = [np.asarray(together.agent(i).replay.data.discount) == 0.0 for i in range(2)]
    assert done[0].any() and done[1].any() and (done[0] != done[1]).any()


def test_a_diverging_agent_is_reported_and_the_others_go_on(runs, tmp_path, capsys):
    # Same shapes as the TD3 population above: its compiled program is reused.
    configs = [td3.Config(hidden_sizes=HIDDEN), td3.Config(hidden_sizes=HIDDEN, actor_lr=1e30)]
    configs[1] = configs[1].replace(critic_lr=1e30)
    result = _train(td3, configs, [0, 1], tmp_path)
    assert "agent 1 (seed 1) diverged at step" in capsys.readouterr().err
    finals = [rows[-1]["return_mean"] for rows in result.evaluations]
    assert np.isfinite(finals[0]) and not np.isfinite(finals[1])
    _, together, _ = runs["TD3"]
    _assert_close(result.agent(0).agent, together.agent(0).agent)


def test_expand_crosses_settings_with_seeds_and_ranks_them():
    agents = population.expand(5, 2, {"tau": [0.01, 0.02], "actor_lr": [1e-3]})
    assert [a.seed for a in agents] == [5, 6, 5, 6]
    assert agents[2].folder("SAC") == "SAC-actor_lr=0.001,tau=0.02-seed5"
    ranking = population.rank_settings(agents, [1.0, 3.0, 10.0, float("nan")])
    assert [r["setting"] for r in ranking] == ["actor_lr=0.001,tau=0.01", "actor_lr=0.001,tau=0.02"]
    assert ranking[0]["mean"] == 2.0 and ranking[1]["diverged"] == 1
    with pytest.raises(ValueError, match="repeat"):
        population.expand(0, 1, {"tau": [0.1, 0.1]})


# --- Two simulated CPU devices, and the entry point -----------------------------------


def _two_devices(out: Path) -> None:
    """Run in a subprocess with two simulated devices: the SAC population (agents split
    over the devices) and one agent (its environments split); save the parameters."""
    assert len(jax.local_devices()) == 2
    agents = _agents("SAC")
    configs = [sac.Config(hidden_sizes=HIDDEN, **dict(a.values)) for a in agents]
    together = _train(sac, configs, [a.seed for a in agents], out / "population")
    alone = _train(sac, configs[:1], [0], out / "alone")
    leaf = jax.tree_util.tree_leaves(together.carry.agent.actor_params)[0]
    env_leaf = alone.carry.env.physics.obs
    flat = {}
    for i in range(len(agents)):
        for j, x in enumerate(jax.tree_util.tree_leaves(together.agent(i).agent.critic_params)):
            flat[f"together{i}_{j}"] = np.asarray(x)
    for j, x in enumerate(jax.tree_util.tree_leaves(alone.agent(0).agent.critic_params)):
        flat[f"alone_{j}"] = np.asarray(x)
    np.savez(out / "params.npz", **flat)
    (out / "placement.json").write_text(
        json.dumps(
            {
                "agents_devices": len(leaf.sharding.device_set),
                "agents_spec": str(leaf.sharding.spec),
                "envs_devices": len(env_leaf.sharding.device_set),
                "envs_spec": str(env_leaf.sharding.spec),
            }
        )
    )


def test_two_simulated_devices_give_the_results_of_one(runs, tmp_path):
    _, together, _ = runs["SAC"]
    # The CPU's two simulated devices, also where an accelerator is visible. A collective
    # waits for both devices' threads; on a loaded 2-core machine one can be starved past
    # XLA's 40 s abort (seen once under `make test`), so the wait is allowed 10 minutes.
    flags = "--xla_force_host_platform_device_count=2"
    flags += " --xla_cpu_collective_call_terminate_timeout_seconds=600"
    env = {
        **os.environ,
        "XLA_FLAGS": flags,
        "JAX_PLATFORMS": "cpu",
    }
    result = subprocess.run(
        [sys.executable, __file__, "--two-devices", str(tmp_path)],
        capture_output=True, text=True, timeout=600, env=env, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    placement = json.loads((tmp_path / "placement.json").read_text())
    assert placement["agents_devices"] == 2 and "agents" in placement["agents_spec"]
    assert placement["envs_devices"] == 2 and "agents" in placement["envs_spec"]
    stored = np.load(tmp_path / "params.npz")
    for i in range(4):
        mine = jax.tree_util.tree_leaves(together.agent(i).agent.critic_params)
        theirs = [stored[f"together{i}_{j}"] for j in range(len(mine))]
        _assert_close(theirs, mine)
    _, _, alone = runs["SAC"]
    mine = jax.tree_util.tree_leaves(alone[0].agent(0).agent.critic_params)
    _assert_close([stored[f"alone_{j}"] for j in range(len(mine))], mine)


def test_entry_point_trains_a_population_and_ranks_its_settings(tmp_path):
    out = tmp_path / "run"
    flags = ["--env", "point_mass", "--hidden_sizes", "16,16", "--no_progress"]
    for key, value in LOOP.items():
        flags += [f"--{key}", str(value)]
    command = [
        sys.executable, str(ROOT / "jax_rl" / "main_brax.py"), "--policy", "TD3",
        "--num_seeds", "2", "--tau", "0.005,0.05", "--save_dir", str(out), *flags,
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "jax_rl: 4 agents (seeds 0-1; tau in {0.005, 0.05}) on brax" in result.stderr
    ranking = (out / "ranking.md").read_text()
    assert ranking.count("| tau=") == 2 and "| 2 |" in ranking
    summary = json.loads((out / "summary.json").read_text())
    assert [a["folder"] for a in summary["agents"]] == [
        "TD3-tau=0.005-seed0", "TD3-tau=0.005-seed1", "TD3-tau=0.05-seed0", "TD3-tau=0.05-seed1",
    ]  # fmt: skip
    for agent in summary["agents"]:
        folder = out / agent["folder"]
        config = json.loads((folder / "config.json").read_text())
        assert (config["seed"], config["algo"]["tau"]) == (agent["seed"], agent["tau"])
        steps = [line.split(",")[0] for line in (folder / "evaluations.csv").read_text().split()]
        assert steps == ["step", "0", "128", "192"]  # evaluations at chunk ends


if __name__ == "__main__":
    if sys.argv[1:2] == ["--two-devices"]:
        _two_devices(Path(sys.argv[2]))
