import json
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_rl.algos import sac, td3
from jax_rl.core.transition import Transition
from jax_rl.tools import benchmark, timing

SIZE, MATMULS = 1024, 4


def busy(x):
    """4 dependent 1024^3 matmuls (8.6 GFLOP): real work that dispatch returns before."""
    for _ in range(MATMULS):
        x = jnp.tanh(x @ x)
    return x


def test_asynchronous_work_is_timed_at_its_real_duration():
    """The work cannot run faster than twice the machine's matmul rate (a bound that
    load only loosens); a timer that did not block would report the dispatch time,
    far below it."""
    f = jax.jit(busy)
    state = {"x": jnp.ones((SIZE, SIZE)) * 1e-3}

    def step():
        state["x"] = f(state["x"])
        return state["x"]

    result = timing.time_steps(step, steps_per_block=3, num_blocks=2, warmup_steps=1)
    fastest_possible = 2 * SIZE**3 * MATMULS / (2 * timing.matmul_rate(SIZE, repeats=3))
    assert min(result.block_seconds) / 3 > fastest_possible

    start = time.perf_counter()
    for _ in range(3):
        state["x"] = f(state["x"])
    dispatch_only = (time.perf_counter() - start) / 3
    jax.block_until_ready(state["x"])
    assert dispatch_only < fastest_possible  # the naive figure the harness must avoid


def test_compile_time_is_kept_out_of_steady_state():
    calls = {"n": 0}

    def step():
        calls["n"] += 1
        if calls["n"] == 1:
            time.sleep(0.5)  # stands in for compilation
        return jnp.zeros(())

    result = timing.time_steps(step, steps_per_block=10, num_blocks=3, warmup_steps=1)
    assert result.first_call_seconds >= 0.5
    assert max(result.block_seconds) < 0.25
    median, mean, std = result.per_1000()
    assert median < 25.0 and std >= 0.0


def test_compiled_flops_counts_a_matmul():
    flops = timing.compiled_flops(
        jax.jit(lambda a, b: a @ b), jnp.ones((64, 32)), jnp.ones((32, 16))
    )
    assert flops is None or abs(flops - 2 * 64 * 32 * 16) / (2 * 64 * 32 * 16) < 0.1


def test_the_lowered_programs_count_is_the_compiled_ones_to_2_percent():
    # compiled_flops reads the lowered program (no second compilation of an update).
    init = jax.jit(td3.init, static_argnums=(1, 2, 3))
    agent = init(jax.random.key(0), 11, 3, td3.Config(hidden_sizes=(64, 64)))
    batch = Transition(
        obs=jnp.zeros((32, 11)), action=jnp.zeros((32, 3)), reward=jnp.zeros(32),
        discount=jnp.ones(32), next_obs=jnp.zeros((32, 11)),
    )  # fmt: skip
    lowered = jax.jit(td3.update).lower(agent, batch, jax.random.key(0))
    counted = timing.compiled_flops(jax.jit(td3.update), agent, batch, jax.random.key(0))
    compiled = lowered.compile().cost_analysis()
    compiled = compiled[0] if isinstance(compiled, (list, tuple)) else compiled
    assert counted == lowered.cost_analysis()["flops"]
    assert abs(counted - compiled["flops"]) / compiled["flops"] < 0.02


def docs_snapshot():
    """(path, size, modification time) of every file under docs/."""
    docs = Path(__file__).resolve().parents[1] / "docs"
    return {(str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in docs.rglob("*")}


def test_quick_benchmark_writes_valid_json_to_a_temporary_folder(tmp_path, monkeypatch, capsys):
    # MPO alone covers the variants (one row per dual solver, one in the returns
    # configuration, with n-step transitions) and, on the Brax
    # pipeline, the host solver's pure_callback inside a compiled chunk.
    # Without --out, --quick writes to a fresh temporary folder it names, never docs/.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = docs_snapshot()
    assert benchmark.main(["--quick", "--policies", "MPO"]) == 0
    assert docs_snapshot() == before
    (folder,) = [p for p in tmp_path.iterdir() if p.name.startswith("jax_rl-bench-")]
    assert f"--quick: writing to {folder}" in capsys.readouterr().err
    tmp_path = folder
    payload = json.loads((tmp_path / "host.json").read_text())
    rows = {row["policy"]: row for row in payload["host_loop"]}
    labels = {"MPO (scipy)", "MPO (newton)", "MPO (adam)", benchmark.MPO_RETURNS_LABEL}
    assert set(rows) == labels
    for row in rows.values():
        assert row["seconds_per_1000_median"] > 0 and np.isfinite(row["seconds_per_1000_median"])
        assert row["compile_seconds"] > 0
    assert 0 < rows["MPO (scipy)"]["scipy_solve_seconds"] < 1.0
    assert rows["MPO (newton)"]["scipy_solve_seconds"] is None
    assert payload["machine"]["cores"] >= 1 and payload["matmul_flops_per_second"] > 0
    table = (tmp_path / "host.md").read_text()
    assert "| MPO (newton) |" in table and "input_layer layernorm" in table
    brax = json.loads((tmp_path / "brax.json").read_text())
    assert [row["policy"] for row in brax["device_pipeline"]] == ["MPO (scipy)", "MPO (newton)"]
    for row in brax["device_pipeline"]:
        assert row["env_steps_per_second"] > 0 and row["compile_seconds"] > 0
        # updates per env step = k / num_envs, by construction of the chunk
        ratio = row["updates_per_second"] / row["env_steps_per_second"]
        assert ratio == pytest.approx(row["updates_per_step"] / row["num_envs"])


def test_critics_benchmark_times_each_option_and_writes_only_critics_tables(tmp_path, monkeypatch):
    # One width of each option: --quick sizes every width to 8, so an option's widths are
    # one program at this size (and the rows differ only in their labels).
    options = {label.split(",")[0]: (label, o) for label, o in benchmark.CRITIC_VARIANTS[::-1]}
    assert sorted(options) == ["crossq", "simba", "simbav2"]
    monkeypatch.setattr(benchmark, "CRITIC_VARIANTS", list(options.values()))
    assert (
        benchmark.main(["--quick", "--critics", "--policies", "TD3,MPO", "--out", str(tmp_path)])
        == 0
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["critics.json", "critics.md"]
    rows = json.loads((tmp_path / "critics.json").read_text())["host_loop"]
    labels = [row["policy"] for row in rows]  # MPO takes neither option: not timed
    assert labels == ["TD3", *[f"TD3 {label}" for label, _ in options.values()]]
    assert all(row["seconds_per_1000_median"] > 0 for row in rows)


def test_brax_only_benchmark_takes_the_sizes_given(tmp_path):
    args = ["--quick", "--skip_host", "--policies", "TD3", "--num_envs", "8"]
    assert benchmark.main([*args, "--updates_per_step", "4", "--out", str(tmp_path)]) == 0
    assert not (tmp_path / "host.json").exists()  # the host loop (dm_control) was not timed
    payload = json.loads((tmp_path / "brax.json").read_text())
    assert payload["settings"]["num_envs"] == 8 and payload["settings"]["updates_per_step"] == 4
    row, td7 = payload["device_pipeline"]  # TD3, then TD3 with --preset td7's parts
    assert row["policy"] == "TD3" and row["num_envs"] == 8
    assert td7["policy"].startswith("TD7") and td7["updates_per_second"] > 0
    assert row["updates_per_second"] / row["env_steps_per_second"] == pytest.approx(4 / 8)


@pytest.mark.parametrize(
    "args",
    [
        ["--skip_host", "--skip_brax"],
        ["--num_envs", "0"],
        ["--policies", "PPO"],
        ["--population", "1,2", "--playground", "CartpoleSwingup,CheetahRun"],
        ["--population", "1,2", "--playground", "CartpoleSwingUp"],
        ["--recipe", "3", "--policies", "TD3,SAC"],
        ["--recipe", "1", "--policies", "SAC"],
        ["--recipe", "3", "--host_population", "3", "--policies", "SAC"],
    ],
)
def test_benchmark_refuses_bad_arguments(args, tmp_path, capsys):
    assert benchmark.main([*args, "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error:")


def test_a_row_with_action_repeat_counts_frames_and_takes_k_frames_per_step(monkeypatch):
    """Each timed step holds its decision for K frames: the row reads per 1000 frames."""
    assert benchmark.variants("SAC")[-1] == ("SAC, action repeat 2", {"action_repeat": 2})
    envs, seen = [], {}
    wrap = benchmark.repeat_actions
    monkeypatch.setattr(benchmark, "repeat_actions", lambda e, k: envs.append(e) or wrap(e, k))

    def fake_time_steps(step, steps_per_block, num_blocks, warmup_steps):
        frames, stored = envs[-1].get_state()["step_count"], int(step().replay.size)
        for _ in range(3):
            step()
        seen["frames"] = envs[-1].get_state()["step_count"] - frames
        seen["stored"] = int(step().replay.size) - stored
        return timing.Timing(1.0, (2.0, 2.0, 2.0), 1000)

    monkeypatch.setattr(benchmark.timing, "time_steps", fake_time_steps)
    plain = benchmark.bench_host_step("SAC", benchmark.QUICK)
    assert seen == {"frames": 4, "stored": 4}
    repeated = benchmark.bench_host_step("SAC", benchmark.QUICK, action_repeat=2)
    assert seen == {"frames": 8, "stored": 4} and repeated["action_repeat"] == 2
    assert plain["seconds_per_1000_median"] == 2.0
    assert repeated["seconds_per_1000_median"] == 1.0  # 2 s per 1000 steps of 2 frames
    # One update per step either way: the same FLOP rate per update.
    assert repeated["achieved_flops_per_second"] == pytest.approx(
        plain["achieved_flops_per_second"]
    )


def test_a_row_with_updates_per_step_makes_that_many_updates_per_step(monkeypatch):
    """`updates_per_step` U is the loop's: each timed step updates U times, and the row's
    FLOP rate counts all U (the same step time, U times the work)."""
    seen = {}

    def fake_time_steps(step, steps_per_block, num_blocks, warmup_steps):
        before = int(step().agent.step)
        for _ in range(3):
            step()
        seen["updates"] = int(step().agent.step) - before
        return timing.Timing(1.0, (2.0, 2.0, 2.0), 1000)

    monkeypatch.setattr(benchmark.timing, "time_steps", fake_time_steps)
    one = benchmark.bench_host_step("SAC", benchmark.QUICK)
    assert seen["updates"] == 4 and one["updates_per_step"] == 1
    two = benchmark.bench_host_step("SAC", benchmark.QUICK, updates_per_step=2, noise_color=1.0)
    assert seen["updates"] == 8 and two["updates_per_step"] == 2
    assert two["achieved_flops_per_second"] == pytest.approx(2 * one["achieved_flops_per_second"])


@pytest.mark.parametrize("preset", ["auto", "recipe"])
def test_the_recipe_benchmark_times_what_the_preset_trains(preset, tmp_path):
    """`--recipe`'s rows take every learner setting and every timed loop setting that
    main_dm_control.py resolves for their preset, and its population row runs on the loop
    `--population_loop auto` picks for that many agents."""
    import dataclasses

    from jax_rl.main_dm_control import DMControlBackend, build_parser
    from jax_rl.run import driver

    rows = benchmark.recipe_rows("SAC", 3)
    assert [label for label, _ in rows] == [
        "SAC, --preset auto (dm_control), 1 agent",
        "SAC, --preset recipe (dm_control), 1 agent",
        "SAC, --preset recipe (dm_control), 3 agents, map",
    ]
    argv = ["--policy", "SAC", "--preset", preset, "--save_dir", str(tmp_path / "run")]
    s = driver.resolve_settings(build_parser(), DMControlBackend(), argv)
    algo, loop = dataclasses.asdict(s.algo_config), dataclasses.asdict(s.loop_config)
    timed = [overrides for label, overrides in rows if f"--preset {preset} " in label]
    for overrides in timed:
        learner = {k: v for k, v in overrides.items() if k in algo}
        assert learner and all(algo[k] == v for k, v in learner.items())
        # Every learner setting the entry point resolves, the row carries (none dropped).
        assert sac.Config(hidden_sizes=s.algo_config.hidden_sizes, **learner) == s.algo_config
        looped = {k: overrides.get(k, 1) for k in ("action_repeat", "updates_per_step")}
        assert looped == {k: loop[k] for k in looped}
        assert overrides.get("noise_color", 0.0) == loop["noise_color"]
        assert set(overrides) - set(algo) <= {
            *benchmark.TIMED_LOOP_SETTINGS,
            "num_agents",
            "population_loop",
        }
    if preset == "recipe":  # the protocol of DM Control: K = 2, U = 2, pink noise
        assert (loop["action_repeat"], loop["updates_per_step"], loop["noise_color"]) == (2, 2, 1.0)
        assert timed[1]["num_agents"] == 3 and timed[1]["population_loop"] == "map"


def test_the_recipe_benchmark_reads_per_frame_against_the_entry(tmp_path, monkeypatch):
    """recipe.md's ratios from hand-set block times: every row 2 s per 1000 steps, so per
    1000 frames the entry (K = 1) 2.0, the recipe (K = 2) 1.0 as one agent and as three;
    per agent per frame against the entry 0.5x and 1/6; the population 1.00x one agent."""

    def fake_time_steps(step, steps_per_block, num_blocks, warmup_steps):
        step()
        return timing.Timing(1.0, (2.0, 2.0), 1000)

    monkeypatch.setattr(benchmark.timing, "time_steps", fake_time_steps)
    args = ["--quick", "--recipe", "3", "--policies", "SAC", "--out", str(tmp_path)]
    assert benchmark.main(args) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["recipe.json", "recipe.md"]
    rows = json.loads((tmp_path / "recipe.json").read_text())["host_loop"]
    assert [(r["num_agents"], r["action_repeat"], r["updates_per_step"]) for r in rows] == [
        (1, 1, 1),
        (1, 2, 2),
        (3, 2, 2),
    ]
    table = (tmp_path / "recipe.md").read_text().splitlines()
    cells = [line.split(" | ")[1:8] for line in table if line.startswith("| SAC")]
    # The last: a 100k-frame cell's training in minutes (s per 1000 frames x 100 / 60).
    assert cells == [
        ["2.00", "2.00 ± 0.00", "1.00x", "n/a", "2.00", "1", "3"],
        ["1.00", "1.00 ± 0.00", "0.50x", "1.00x", "1.00", "1", "2"],
        ["1.00", "1.00 ± 0.00", "0.17x", "1.00x", "0.33", "1", "2"],
    ]
