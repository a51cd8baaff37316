"""`python -m jax_rl.tools.results`: the table's figures, and a build across sittings."""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from jax_rl.run import cluster
from jax_rl.tools import results

ROOT = Path(__file__).resolve().parent.parent

# Every run's flags but the ones the table sets (task, learner, seeds, steps, checkpoints).
TINY = (
    "--start_timesteps 100 --batch_size 32 --hidden_sizes 32,32 --eval_freq 100 "
    "--eval_episodes 1 --log_freq 100"
)


def write_run(folder: Path, finals: list[float], steps: int) -> None:
    """A finished population run's files as the entry point writes them."""
    for seed, final in enumerate(finals):
        agent = folder / f"TD3-seed{seed}"
        agent.mkdir(parents=True)
        (agent / "evaluations.csv").write_text(
            f"step,return_mean,return_std\n{steps // 2},10.0,0.0\n{steps},{final},0.0\n"
        )
    summary = {"agents": [{} for _ in finals], "env_steps_per_agent": steps, "wall_time": 600}
    (folder / "summary.json").write_text(json.dumps(summary))


def test_table_cells_are_mean_and_t_interval_beside_the_published_figure(tmp_path):
    out = tmp_path / "dmc100k"
    write_run(out / "cartpole-swingup" / "TD3", [800.0, 820.0, 840.0], 100_000)
    write_run(out / "cartpole-swingup" / "SAC", [800.0, 820.0], 100_000)
    args = results.parse_args(["--tasks", "cartpole-swingup,walker-walk", "--out", str(out)])
    assert results.finished(out / "cartpole-swingup" / "TD3", 3, 100_000)
    assert not results.finished(out / "cartpole-swingup" / "SAC", 3, 100_000)  # 2 agents
    assert not results.finished(out / "cartpole-swingup" / "TD3", 3, 50_000)
    table = results.write_table(args).read_text()
    # 3 seeds: mean 820, std 20, t(0.975, 2) = 4.303 -> 4.303 * 20 / sqrt(3) = 49.7.
    # 2 seeds: mean 810, std 14.14, t(0.975, 1) = 12.71 -> 12.71 * 14.14 / sqrt(2) = 127.
    assert (
        "| task | TD3 | SAC | MPO | TD-MPC2 SAC, 100k | MR.Q, 100k | SimbaV2, 100k |" in table
    )  # every published column, each cited below the table
    assert (
        "| cartpole-swingup | 820 ± 50 (defaults) | 810 ± 127 (defaults) | not run yet | 835 ± 10 "
        "| 853 ± 7 | 861 ± 13 |" in table
    )
    assert (
        "| walker-walk | not run yet | not run yet | not run yet | 708 ± 204 | 891 ± 78 | 962 ± 5 |"
        in table
    )
    assert "- TD-MPC2 SAC: TD-MPC2 (Hansen et al., 2024)" in table
    assert "- MR.Q: MR.Q (Fujimoto et al., ICLR 2025), its results files, 10 seeds" in table
    assert "- SimbaV2: SimbaV2 (Lee et al., 2025" in table
    assert "TD3 cartpole-swingup 10 min; SAC cartpole-swingup 10 min" in table
    assert results.write_figure(args).exists()


def test_each_learner_keeps_its_colour_in_every_panel(tmp_path, monkeypatch):
    from matplotlib import colors
    from matplotlib.figure import Figure

    out = tmp_path / "dmc100k"
    write_run(out / "cartpole-swingup" / "MPO", [800.0, 820.0, 840.0], 100_000)  # MPO alone
    write_run(out / "walker-walk" / "TD3", [900.0, 900.0, 900.0], 100_000)
    write_run(out / "walker-walk" / "MPO", [500.0, 500.0, 500.0], 100_000)
    drawn = []
    monkeypatch.setattr(Figure, "savefig", lambda fig, path: drawn.append(fig))
    results.write_figure(results.parse_args(["--out", str(out)]))
    cartpole, walker = drawn[0].axes[:2]
    mpo, td3 = colors.to_rgba("C2"), colors.to_rgba("C0")  # the suite's third and first
    assert [colors.to_rgba(line.get_color()) for line in walker.get_lines()[:2]] == [td3, mpo]
    assert colors.to_rgba(cartpole.get_lines()[0].get_color()) == mpo
    # MR.Q's line in TD3's colour, though no TD3 ran on cartpole-swingup.
    assert td3 in [colors.to_rgba(line.get_color()) for line in cartpole.get_lines()[1:]]


def test_the_gym_suite_sets_both_published_learners_beside_ours(tmp_path):
    out = tmp_path / "gym200k"
    write_run(out / "Hopper-v5" / "SAC", [3000.0, 3100.0, 3200.0], 200_000)
    args = results.parse_args(["--suite", "gym", "--out", str(out)])
    assert (args.tasks, args.learners, args.steps) == (
        ["HalfCheetah-v5", "Hopper-v5", "Humanoid-v5", "Walker2d-v5", "Ant-v5"], ["SAC", "TD3"],
        200_000,
    )  # fmt: skip
    assert results.run_flags(args, "Hopper-v5", "SAC")[:4] == [
        "--policy", "SAC", "--env", "Hopper-v5"
    ]  # fmt: skip
    table = results.write_table(args).read_text()
    assert "| task | SAC | TD3 | Tianshou SAC, 200k | Tianshou TD3, 200k |" in table
    # mean 3100, std 100, t(0.975, 2) = 4.303 -> 4.303 * 100 / sqrt(3) = 248.4.
    assert "| Hopper-v5 | 3100 ± 248 (defaults) | not run yet | 3234 ± 314 | 887 ± 649 |" in table
    assert "| Ant-v5 | not run yet | not run yet | 2133 ± 977 | 1987 ± 657 |" in table
    # Both columns come from one benchmark, cited once.
    assert table.count("thu-ml/tianshou") == 1
    assert "- Tianshou SAC, Tianshou TD3: Tianshou's MuJoCo benchmark" in table
    # At other step counts no published figure stands beside ours.
    other = results.parse_args(["--suite", "gym", "--steps", "1000", "--out", str(out)])
    other_table = results.write_table(other).read_text()
    assert "| Hopper-v5 | 3100 ± 248 (defaults) | not run yet | - | - |" in other_table


def test_bad_arguments_exit_2():
    for argv in (
        ["--tasks", "cartpole"],
        ["--learners", "PPO"],
        ["--seeds", "0"],
        ["--progress_every", "0"],
        ["--adopt", "run", "--learners", "SAC"],  # which task's cell?
        ["--adopt", "run", "--tasks", "walker-walk,cheetah-run", "--learners", "SAC"],
    ):
        result = subprocess.run(
            [sys.executable, "-m", "jax_rl.tools.results", *argv], capture_output=True, text=True
        )
        assert result.returncode == 2, argv
        assert "error:" in result.stderr and "Traceback" not in result.stderr


def test_reading_a_cells_settings_prints_no_third_party_noise(tmp_path):
    # HalfCheetah-v5's model uses MuJoCo's deprecated `settotalmass`: opening it to resolve
    # the cell's settings warned on this process's stderr before quiet.install() here.
    result = subprocess.run(
        [
            sys.executable, "-m", "jax_rl.tools.results", "--suite", "gym",
            "--tasks", "HalfCheetah-v5", "--learners", "TD3", "--seeds", "1",
            "--runs_dir", str(tmp_path / "runs"),
            "--out", str(tmp_path / "out" / "gym200k"), "--flags", "--replay_size 100000000000",
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 1  # the run refused its replay size: the cell failed
    assert result.stderr == "error: failed: TD3 on HalfCheetah-v5\n"
    log = (tmp_path / "runs" / "TD3-HalfCheetah-v5.log").read_text()
    assert (
        log.startswith("error: a replay buffer of 100,000,000,000 rows") and "\n" not in log.strip()
    )


def run_results(tmp_path: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable, "-m", "jax_rl.tools.results", "--tasks", "cartpole-swingup",
            "--learners", "TD3", "--seeds", "2", "--steps", "300", "--checkpoint_every", "100",
            "--runs_dir", str(tmp_path / "runs"), "--out", str(tmp_path / "out" / "dmc0k"),
            "--flags", TINY,
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def test_an_interrupted_table_continues_from_the_checkpoint_then_skips_what_is_done(tmp_path):
    killed = run_results(tmp_path, {"JAX_RL_KILL_AT_STEP": "200"})
    assert killed.returncode == 1
    assert "TD3 on cartpole-swingup: starting" in killed.stdout
    assert "error: failed: TD3 on cartpole-swingup" in killed.stderr
    table = tmp_path / "out" / "dmc0k.md"
    assert "| cartpole-swingup | not run yet |" in table.read_text()

    resumed = run_results(tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "continuing from its checkpoint" in resumed.stdout
    log = (tmp_path / "runs" / "TD3-cartpole-swingup.log").read_text()
    assert "resumed from the checkpoint at step 200" in log
    cell = tmp_path / "out" / "dmc0k" / "cartpole-swingup" / "TD3"
    curves = sorted(cell.rglob("evaluations.csv"))
    assert [p.parent.name for p in curves] == ["TD3-seed0", "TD3-seed1"]
    assert not list(cell.rglob("*.msgpack"))  # no checkpoints or parameters in the repository
    finals = results.final_returns(cell)
    # TD3's one dm_control entry was chosen on other tasks: held out here.
    assert f"| cartpole-swingup | {results.cell_text(finals)} (held out) |" in table.read_text()
    assert (tmp_path / "out" / "dmc0k.png").exists()

    again = run_results(tmp_path)
    assert again.returncode == 0
    assert "TD3 on cartpole-swingup: already in" in again.stdout


def test_a_sitting_stopped_by_sigterm_stops_its_run_at_a_checkpoint(tmp_path):
    # A scheduler's SIGTERM reaches the sitting, not its run: the sitting must pass it on
    # and wait, or the run trains on unseen and the next sitting starts a second writer
    # in the same folder.
    sitting = subprocess.Popen(
        [
            sys.executable, "-m", "jax_rl.tools.results", "--tasks", "cartpole-swingup",
            "--learners", "TD3", "--seeds", "1", "--steps", "20000", "--checkpoint_every",
            "100", "--runs_dir", str(tmp_path / "runs"), "--out", str(tmp_path / "out"),
            "--flags", TINY,
        ],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # its run in its process group, killed at the end if left
    )  # fmt: skip
    try:
        _stop_by_sigterm(sitting, tmp_path)
    finally:  # whatever of its process group is left (its run, where it was not stopped)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(sitting.pid, signal.SIGKILL)
        sitting.wait()


def _stop_by_sigterm(sitting: subprocess.Popen, tmp_path: Path) -> None:
    run_dir, log = (
        tmp_path / "runs" / "TD3-cartpole-swingup",
        tmp_path / "runs" / "TD3-cartpole-swingup.log",
    )
    deadline = time.monotonic() + 300
    while not run_dir.exists() or cluster.latest_step(run_dir) is None:
        assert sitting.poll() is None and time.monotonic() < deadline
        time.sleep(0.5)
    sitting.send_signal(signal.SIGTERM)
    _, stderr = sitting.communicate(timeout=300)
    assert sitting.returncode == 128 + signal.SIGTERM
    assert stderr.strip().splitlines()[-1].startswith("stopped: any run in progress saved")
    assert "stopped by SIGTERM at step" in log.read_text()  # the run's own clean stop
    assert list((run_dir / "checkpoints").iterdir())


def test_a_sitting_narrowed_to_one_task_keeps_every_row_of_the_table(tmp_path):
    out = tmp_path / "gym200k"
    write_run(out / "HalfCheetah-v5" / "SAC", [5000.0, 5000.0, 5000.0], 200_000)
    write_run(out / "Hopper-v5" / "SAC", [3000.0, 3000.0, 3000.0], 200_000)
    args = results.parse_args(["--suite", "gym", "--tasks", "Hopper-v5", "--out", str(out)])
    assert args.tasks == ["Hopper-v5"]  # what this sitting trains
    table = results.write_table(args).read_text()
    assert "| HalfCheetah-v5 | 5000 ± 0 (defaults) | not run yet |" in table
    assert "| Hopper-v5 | 3000 ± 0 (defaults) | not run yet |" in table


def test_a_task_outside_the_suite_keeps_its_row_once_it_has_results(tmp_path):
    out = tmp_path / "dmc100k"
    write_run(out / "walker-run" / "SAC", [300.0, 300.0, 300.0], 100_000)
    args = results.parse_args(["--tasks", "cartpole-swingup", "--out", str(out)])
    table = results.write_table(args).read_text()
    rows = [line.split(" | ")[0] for line in table.splitlines() if line.startswith("| ")]
    assert rows[1:] == [
        "| cartpole-swingup", "| walker-walk", "| cheetah-run", "| reacher-easy",
        "| finger-spin", "| ball_in_cup-catch", "| walker-run",
    ]  # fmt: skip
    # TD-MPC2's SAC at 100k (3 seeds: 367.8 / 355.7 / 295.2), MR.Q's and SimbaV2's.
    row = "| walker-run | not run yet | 300 ± 0 (defaults) | not run yet | 340 ± 39 | 479 ± 109 |"
    assert row in table


def test_each_cell_says_whether_its_preset_was_tuned_on_its_task(tmp_path):
    out = tmp_path / "gym200k"
    for task, preset in (
        ("Hopper-v5", "tuned/gymnasium/Hopper-v5"),  # a task entry: tuned on its task
        ("HalfCheetah-v5", "gymnasium/*"),  # the suite entry, chosen on HalfCheetah-v5
        ("Ant-v5", "gymnasium/*"),  # the suite entry on a task it was not chosen on
    ):
        write_run(out / task / "TD3", [1000.0, 1000.0, 1000.0], 200_000)
        config = {"preset": {"name": preset}, "loop": {}, "algo": {}, "sweep": {}}
        (out / task / "TD3" / "config.json").write_text(json.dumps(config))
    args = results.parse_args(["--suite", "gym", "--out", str(out), "--preset", "tuned"])
    table = results.write_table(args).read_text()
    assert "| Hopper-v5 | not run yet | 1000 ± 0 (tuned) |" in table
    # One setting for every task, chosen on a panel that holds HalfCheetah-v5: *panel*.
    assert "| HalfCheetah-v5 | not run yet | 1000 ± 0 (panel) |" in table
    assert "| Ant-v5 | not run yet | 1000 ± 0 (held out) |" in table
    assert "| Walker2d-v5 | not run yet | not run yet |" in table
    # A `*` entry's tasks as the run recorded them win over the file's (the entry may have
    # been replaced since): the file's gymnasium/* was chosen on Humanoid-v5, not Walker2d-v5.
    for task, tuned_on in (("Walker2d-v5", ["Walker2d-v5"]), ("Humanoid-v5", ["Ant-v5"])):
        write_run(out / task / "TD3", [1000.0, 1000.0, 1000.0], 200_000)
        config = {"preset": {"name": "gymnasium/*", "tuned_on": tuned_on}, "algo": {}}
        (out / task / "TD3" / "config.json").write_text(json.dumps(config))
    table = results.write_table(args).read_text()
    assert "| Walker2d-v5 | not run yet | 1000 ± 0 (panel) |" in table
    assert "| Humanoid-v5 | not run yet | 1000 ± 0 (held out) |" in table


def test_the_recipe_s_cells_are_panel_on_its_panel_and_held_out_elsewhere(tmp_path):
    # `--preset recipe`'s entries are `*` entries of named presets: their tuned_on, as the
    # run recorded it or (a run that recorded none) as the preset file has it.
    out = tmp_path / "dmc28_recipe"
    recorded = ["cheetah-run", "finger-spin", "cartpole-swingup_sparse", "walker-run"]
    for task, tuned_on in (
        ("cheetah-run", recorded),
        ("walker-walk", recorded),
        ("walker-run", None),  # from the file: sac.toml's recipe/dm_control/*
        ("hopper-hop", None),
        ("finger-spin", []),  # recorded before the entry named its panel: held out
    ):
        write_run(out / task / "SAC", [500.0, 500.0, 500.0], 100_000)
        preset = {"name": "recipe/dm_control/*"}
        if tuned_on is not None:
            preset["tuned_on"] = tuned_on
        config = {"preset": preset, "loop": {}, "algo": {}, "sweep": {}}
        (out / task / "SAC" / "config.json").write_text(json.dumps(config))
    tasks = ("cheetah-run", "walker-walk", "walker-run", "hopper-hop", "finger-spin")
    relation = {task: results.tuning_of(out / task / "SAC", task, "SAC") for task in tasks}
    assert relation == {
        "cheetah-run": "panel",
        "walker-walk": "held out",
        "walker-run": "panel",
        "hopper-hop": "held out",
        "finger-spin": "held out",
    }
    argv = ["--suite", "dmc28", "--learners", "SAC", "--out", str(out), "--table_only"]
    table = results.write_table(results.parse_args([*argv, "--preset", "recipe"])).read_text()
    assert "| cheetah-run | not run yet | 500 ± 0 (panel) |" in table
    assert "| walker-walk | not run yet | 500 ± 0 (held out) |" in table


def test_a_tuned_table_is_its_own_and_the_defaults_never_write_into_one(tmp_path, capsys):
    # --preset NAME reaches every cell's run, and its table is <suite's folder>_NAME.
    args = results.parse_args(["--suite", "gym", "--preset", "tuned"])
    assert args.out == ROOT / "docs" / "results" / "gym200k_tuned"
    assert results.run_flags(args, "Ant-v5", "TD3")[-2:] == ["--preset", "tuned"]
    defaults = results.parse_args(["--suite", "gym"])
    assert "--preset" not in results.run_flags(defaults, "Ant-v5", "TD3")
    # A table of task entries (as those made before they left the defaults) takes no cell
    # of the defaults; the tuned preset adds to it, and its header names the command.
    out = tmp_path / "gym200k"
    write_run(out / "Hopper-v5" / "TD3", [1000.0, 1000.0, 1000.0], 200_000)
    config = {"preset": {"name": "gymnasium/Hopper-v5"}, "loop": {}, "algo": {}, "sweep": {}}
    (out / "Hopper-v5" / "TD3" / "config.json").write_text(json.dumps(config))
    with pytest.raises(SystemExit) as stop:
        results.main(["--suite", "gym", "--out", str(out), "--table_only"])
    assert stop.value.code == 2
    assert capsys.readouterr().err == (
        f"error: {out} holds cells of task entries (Hopper-v5/TD3 (gymnasium/Hopper-v5)), "
        "which the defaults no longer have: it is a --preset tuned table; pass --preset tuned "
        "to add to it, or another --out for the defaults' table\n"
    )
    assert not (tmp_path / "gym200k.md").exists()
    argv = ["--suite", "gym", "--out", str(out), "--table_only", "--preset", "tuned"]
    assert results.main([*argv, "--bootstrap_reps", "10"]) == 0
    table = (tmp_path / "gym200k.md").read_text()
    assert 'Regenerate: `make gym-results RESULTS_FLAGS="--preset tuned"`' in table
    assert "`--preset tuned`: a task's own entry where the learner's presets file has one" in table
    assert "| Hopper-v5 | not run yet | 1000 ± 0 (tuned) |" in table
    with pytest.raises(SystemExit):  # --preset given twice
        results.parse_args(["--suite", "gym", "--preset", "tuned", "--flags", "--preset td7"])


def test_the_playground_suite_trains_on_the_device_pipeline_with_mpo_solving_in_the_graph(
    tmp_path,
):
    out = tmp_path / "playground100k"
    write_run(out / "CartpoleSwingup" / "SAC", [800.0, 820.0, 840.0], 100_000)
    (out / "CartpoleSwingup" / "SAC" / "config.json").write_text('{"device": "cuda:0"}')
    args = results.parse_args(["--suite", "playground", "--out", str(out)])
    assert args.tasks == [
        "CartpoleSwingup", "WalkerWalk", "CheetahRun", "ReacherEasy", "FingerSpin", "BallInCup"
    ]  # fmt: skip
    mpo = results.run_flags(args, "CheetahRun", "MPO")
    assert mpo[:4] == ["--policy", "MPO", "--env", "CheetahRun"]
    assert mpo[-2:] == ["--dual_solver", "newton"]
    assert "--dual_solver" not in results.run_flags(args, "CheetahRun", "SAC")
    assert str(results.ROOT / "jax_rl" / "main_brax.py").endswith(args.suite.entry_point)
    table = results.write_table(args).read_text()
    assert "one vmapped population on the device pipeline" in table
    assert (
        "| CartpoleSwingup | not run yet | 820 ± 50 (defaults) | not run yet | 835 ± 22 |" in table
    )
    assert "SAC CartpoleSwingup 10 min on cuda:0" in table


def dmc_args(tmp_path, *more):
    return results.parse_args(
        ["--tasks", "cartpole-swingup", "--runs_dir", str(tmp_path / "runs"),
         "--out", str(tmp_path / "out"), *more]
    )  # fmt: skip


def test_a_cells_settings_resolve_through_its_preset_and_its_flags(tmp_path):
    td3 = results.resolved_settings(dmc_args(tmp_path), "cartpole-swingup", "TD3")
    assert td3["algo"]["crossq"] and td3["algo"]["policy_freq"] == 3  # the task's preset
    assert td3["loop"]["max_timesteps"] == 100_000 and td3["sweep"] == {}
    paper = dmc_args(tmp_path, "--flags", "--preset paper --tau 0.01")
    td3_paper = results.resolved_settings(paper, "cartpole-swingup", "TD3")
    assert not td3_paper["algo"]["crossq"] and td3_paper["algo"]["tau"] == 0.01


def test_a_finished_cell_trains_again_when_its_settings_changed_and_only_then(
    tmp_path, monkeypatch, capsys
):
    args = dmc_args(tmp_path, "--learners", "SAC")
    now = results.resolved_settings(args, "cartpole-swingup", "SAC")
    assert now["algo"]["tau"] == 0.005
    cell = tmp_path / "out" / "cartpole-swingup" / "SAC"
    write_run(cell, [700.0, 800.0, 900.0], 100_000)
    older = {"loop": now["loop"], "algo": {**now["algo"], "tau": 0.01}, "sweep": {}}
    # A setting added since the run ran at its default: the same, unless set otherwise now.
    del older["algo"]["hold_exploration"]
    (cell / "config.json").write_text(json.dumps(older))
    assert results.changed_settings(cell / "config.json", now) == ["algo.tau 0.01 -> 0.005"]
    assert now["algo"]["alpha_lr"] != now["defaults"]["algo"]["alpha_lr"]  # the preset's
    unrecorded = {**older, "algo": {k: v for k, v in older["algo"].items() if k != "alpha_lr"}}
    (cell / "config.json").write_text(json.dumps(unrecorded))
    assert sorted(results.changed_settings(cell / "config.json", now)) == [
        "algo.alpha_lr 0.0003 (unrecorded: the default) -> 0.001",
        "algo.tau 0.01 -> 0.005",
    ]
    (cell / "config.json").write_text(json.dumps(older))
    assert results.changed_settings(tmp_path / "no-config.json", now) == []
    # Widths compare as built: critics named 256-256 are the default hidden_sizes' 256-256.
    assert now["algo"]["critic_hidden_sizes"] == [] and now["algo"]["hidden_sizes"] == [256, 256]
    for named, change in (([256, 256], []), ([512, 512], ["[512, 512] -> [256, 256]"])):
        widths = {"loop": now["loop"], "algo": {**now["algo"], "critic_hidden_sizes": named}}
        (cell / "config.json").write_text(json.dumps({**widths, "sweep": {}}))
        found = results.changed_settings(cell / "config.json", now)
        assert found == [f"algo.critic_hidden_sizes {c}" for c in change]
    # A run from before the widths were settings (none recorded) built the default's.
    before_widths = {k: v for k, v in now["algo"].items() if k not in results.WIDTH_KEYS}
    (cell / "config.json").write_text(json.dumps({**older, "algo": {**before_widths, "tau": 0.01}}))
    assert results.changed_settings(cell / "config.json", now) == ["algo.tau 0.01 -> 0.005"]
    (cell / "config.json").write_text(json.dumps(older))

    trained = []
    monkeypatch.setattr(results, "train_cell", lambda *a: trained.append(a[1:3]) or True)
    argv = ["--tasks", "cartpole-swingup", "--learners", "SAC", "--runs_dir"]
    argv += [str(tmp_path / "runs"), "--out", str(tmp_path / "out")]
    assert results.main(argv) == 0
    assert trained == [("cartpole-swingup", "SAC")]
    assert "ran with other settings (algo.tau 0.01 -> 0.005); training it again" in (
        capsys.readouterr().out
    )
    (cell / "config.json").write_text(json.dumps(now))  # the same settings: skipped
    assert results.main(argv) == 0
    assert trained == [("cartpole-swingup", "SAC")]
    assert "SAC on cartpole-swingup: already in" in capsys.readouterr().out


def test_a_run_with_other_settings_is_moved_aside_and_a_fresh_one_started(tmp_path, monkeypatch):
    args = dmc_args(tmp_path, "--learners", "SAC")
    now = results.resolved_settings(args, "cartpole-swingup", "SAC")
    run_dir = tmp_path / "runs" / "SAC-cartpole-swingup"
    (run_dir / "checkpoints" / "5000").mkdir(parents=True)
    older = {**now, "algo": {**now["algo"], "discount": 0.98}}
    (run_dir / "config.json").write_text(json.dumps(older))
    calls = []

    class Run:  # the entry point's process, failing at once
        def __init__(self, argv, **_):
            calls.append(argv)

        def __enter__(self):
            return self

        def __exit__(self, *_):
            return False

        def wait(self, timeout=None):
            return 1

    monkeypatch.setattr(results.subprocess, "Popen", Run)
    assert not results.train_cell(args, "cartpole-swingup", "SAC", "[1/1]", now)
    aside = tmp_path / "runs" / "SAC-cartpole-swingup.replaced"
    assert (aside / "checkpoints" / "5000").is_dir()
    assert "--save_dir" in calls[0] and "--resume" not in calls[0]
    # A run with these settings is continued.
    (run_dir / "checkpoints" / "5000").mkdir(parents=True)
    (run_dir / "config.json").write_text(json.dumps(now))
    assert not results.train_cell(args, "cartpole-swingup", "SAC", "[1/1]", now)
    assert calls[1][calls[1].index("--resume") + 1] == str(run_dir)


def table_rows(text: str, header: str) -> list[str]:
    """The rows of the Markdown table whose header line is `header` (none if it is absent)."""
    lines = text.splitlines()
    if header not in lines:
        return []
    rows = []
    for line in lines[lines.index(header) + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def test_the_readmes_result_rows_are_the_tables_with_their_tuned_marks():
    """Each results table in the README is its generated table, each cell's tuning as t / h / d."""
    readme = (ROOT / "README.md").read_text()
    short = {" (tuned)": " t", " (panel)": " p", " (held out)": " h", " (defaults)": " d"}
    for table in ("dmc100k.md", "gym200k.md"):
        text = (ROOT / "docs" / "results" / table).read_text()
        header = next(line for line in text.splitlines() if line.startswith("| task |"))
        shown = table_rows(readme, header)
        assert shown, f"the README has no table with {table}'s header"
        expected = table_rows(text, header)
        for long, letter in short.items():
            expected = [row.replace(long, letter) for row in expected]
        assert shown == expected, table


def hand_made_run(folder: Path, changes: dict | None = None) -> Path:
    """A finished SAC run on cartpole-swingup made with `main_dm_control.py --preset paper
    --crossq ...`: the settings of the cell's preset entry, reached by flags."""
    args = results.parse_args(["--tasks", "cartpole-swingup", "--learners", "SAC"])
    settings = results.resolved_settings(args, "cartpole-swingup", "SAC")
    for key, value in (changes or {}).items():
        part, name = key.split(".")
        settings[part][name] = value
    write_run(folder, [800.0, 820.0, 840.0], 100_000)
    config = {
        "policy": "SAC", "env_backend": "dm_control", "domain_name": "cartpole",
        "task_name": "swingup", "preset": None, "flags": {"crossq": True}, **settings,
    }  # fmt: skip
    for path in [folder / "config.json", *(p / "config.json" for p in folder.glob("*-seed*"))]:
        path.write_text(json.dumps(config))
    return folder


def adopt(tmp_path: Path, run: Path, *more: str) -> int:
    argv = ["--tasks", "cartpole-swingup", "--learners", "SAC", "--adopt", str(run), *more]
    return results.main([*argv, "--out", str(tmp_path / "dmc100k"), "--runs_dir", str(tmp_path)])


def test_a_run_made_by_hand_with_the_cells_settings_is_adopted_under_its_preset(tmp_path):
    run = hand_made_run(tmp_path / "by_hand")
    assert adopt(tmp_path, run) == 0
    cell = tmp_path / "dmc100k" / "cartpole-swingup" / "SAC"
    for path in [cell / "config.json", cell / "TD3-seed0" / "config.json"]:
        config = json.loads(path.read_text())
        assert config["preset"]["name"] == "dm_control/*"
        assert config["adopted"] == {"from": str(run), "preset": None, "flags": {"crossq": True}}
    assert results.final_returns(cell) == [800.0, 820.0, 840.0]
    table = (tmp_path / "dmc100k.md").read_text()
    assert "| cartpole-swingup | not run yet | 820 ± 50 (held out) |" in table  # CrossQ's entry


def test_a_run_with_other_settings_or_steps_is_not_adopted(tmp_path, capsys):
    run = hand_made_run(tmp_path / "beta1", {"algo.adam_beta1": 0.9})
    assert adopt(tmp_path, run) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "algo.adam_beta1 0.9 -> 0.5" in err[0], err
    assert not (tmp_path / "dmc100k").exists()
    run = hand_made_run(tmp_path / "short")
    assert adopt(tmp_path, run, "--steps", "50000") == 2
    assert "not a finished run of 3 agents x 50000 steps" in capsys.readouterr().err
    assert not (tmp_path / "dmc100k").exists()


def test_fewer_steps_than_the_table_never_write_under_docs(tmp_path, monkeypatch, capsys):
    """A short build goes to a temporary folder it names unless --out says where; the full
    size keeps the committed folder."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    short = results.parse_args(["--tasks", "cartpole-swingup", "--steps", "1000"])
    assert short.out.parent == tmp_path and short.out.name.startswith("jax_rl-results-")
    assert f"--steps 1000 is below the table's 100000: writing to {short.out}" in (
        capsys.readouterr().err
    )
    chosen = results.parse_args(["--steps", "1000", "--out", str(tmp_path / "mine")])
    assert chosen.out == tmp_path / "mine"
    assert results.parse_args([]).out == ROOT / "docs" / "results" / "dmc100k"


def test_a_training_cell_says_how_far_it_is_while_it_trains(tmp_path):
    """Every --progress_every seconds while the run trains: its steps and the newest
    evaluation all its agents have finished, once per change; then the run's exit code."""
    run = tmp_path / "TD3-walker-walk"
    seeds = [run / "TD3-seed0", run / "TD3-seed1"]
    for agent in seeds:
        agent.mkdir(parents=True)

    def write(name: str, *rows: str) -> Callable[[], None]:
        def write_rows() -> None:
            for agent, row in zip(seeds, rows, strict=True):
                header = (  # the columns of the logger's files
                    "step,wall_time,return_mean,return_std"
                    if name == "evaluations.csv"
                    else "step,wall_time,critic_loss"
                )
                path = agent / name
                text = path.read_text() if path.exists() else header + "\n"
                path.write_text(text + row)

        return write_rows

    class Run:  # the entry point's process as Popen has it: each wait() is one poll
        def __init__(self, *polls):
            self.polls = list(polls)

        def wait(self, timeout):
            assert timeout == 0.5
            poll = self.polls.pop(0)
            if isinstance(poll, int):
                return poll
            poll()
            raise subprocess.TimeoutExpired("main_dm_control.py", timeout)

    said: list[str] = []
    process = Run(
        lambda: None,  # compiling: nothing written yet, nothing said
        write("evaluations.csv", "0,3.1,10.0,1.0\n", "0,3.1,12.4,1.0\n"),
        write("train.csv", "1000,9.0,0.5\n", "1000,9.0,0.5\n"),
        write("evaluations.csv", "1000,9.2,55.5,2.0\n", "1000,9.2,6"),  # seed 1's half written
        lambda: None,  # no change: said once only
        write("evaluations.csv", "", "1.2,3.0\n"),
        write("train.csv", "20", "20"),  # half written: not 20 steps
        write("train.csv", "00,15.1,0.4\n", "00,15.1,0.4\n"),
        0,
    )
    code = results.wait_reporting(process, run, 3000, 0.5, said.append)
    assert code == 0 and not process.polls
    assert said == [
        "1,000 / 3,000 steps; evaluation at 0: 10 / 12",
        "1,000 / 3,000 steps; evaluation at 1,000: 56 / 61",
        "2,000 / 3,000 steps; evaluation at 1,000: 56 / 61",
    ]


# dm_control's 28 state tasks, as the suite must list them (domain-task, dm_control's names).
DMC28 = [
    "acrobot-swingup", "ball_in_cup-catch", "cartpole-balance", "cartpole-balance_sparse",
    "cartpole-swingup", "cartpole-swingup_sparse", "cheetah-run", "dog-run", "dog-stand",
    "dog-trot", "dog-walk", "finger-spin", "finger-turn_easy", "finger-turn_hard", "fish-swim",
    "hopper-hop", "hopper-stand", "humanoid-run", "humanoid-stand", "humanoid-walk",
    "pendulum-swingup", "quadruped-run", "quadruped-walk", "reacher-easy", "reacher-hard",
    "walker-run", "walker-stand", "walker-walk",
]  # fmt: skip
# The preset TD3's and SAC's dmc28 cells record: their `dm_control/*` entry.
DMC_ENTRY = {"name": "dm_control/*", "tuned_on": ["cheetah-run", "walker-walk", "finger-spin"]}


def test_the_dmc28_suite_is_dm_controls_28_tasks_beside_mrq_simbav2_and_bro():
    args = results.parse_args(["--suite", "dmc28"])
    assert (args.tasks, args.learners, args.steps) == (DMC28, ["TD3", "SAC"], 100_000)
    assert args.suite.entry_point == "main_dm_control.py"
    assert args.suite.backend == "DMControlBackend"
    assert results.run_flags(args, "ball_in_cup-catch", "SAC")[:6] == [
        "--policy", "SAC", "--domain_name", "ball_in_cup", "--task_name", "catch"
    ]  # fmt: skip
    # The table is docs/results/dmc28.md at the suite's steps; another count keeps its own.
    assert args.out == ROOT / "docs" / "results" / "dmc28"
    assert args.out.with_suffix(".md") == ROOT / "docs" / "results" / "dmc28.md"
    longer = results.parse_args(["--suite", "dmc28", "--steps", "500000"])
    assert longer.out == ROOT / "docs" / "results" / "dmc28_500k"
    mrq, simba, bro = args.suite.references
    assert [(r.column, r.learner) for r in (mrq, simba, bro)] == [
        ("MR.Q", "TD3"), ("SimbaV2", "SAC"), ("BRO", "SAC")
    ]  # fmt: skip
    assert args.suite.reference_steps == 100_000
    # Spot checks, by hand from REFERENCES.md's table "all 28 state tasks, at 100k frames".
    assert sorted(mrq.values) == sorted(DMC28)
    assert mrq.values["acrobot-swingup"] == (56, 51)
    assert mrq.values["cartpole-swingup"] == (853, 8)
    assert mrq.values["humanoid-run"] == (1, 0)
    assert mrq.values["dog-stand"] == (230, 22)
    assert mrq.values["walker-walk"] == (891, 83)
    assert simba.values["cheetah-run"] == (642, 124)
    assert simba.values["pendulum-swingup"] == (245, 339)
    assert bro.values["hopper-stand"] == (862, 84) and bro.marks["hopper-stand"] == "†"
    assert bro.values["dog-run"] == (23, 14) and "dog-run" not in bro.marks  # 10 seeds
    for none in ("acrobot-swingup", "fish-swim", "humanoid-stand", "walker-stand"):  # "–"
        assert none not in simba.values and none not in bro.values
    assert len(simba.values) == len(bro.values) == 18
    assert set(bro.marks) == {
        "ball_in_cup-catch", "cartpole-swingup", "cartpole-swingup_sparse", "finger-spin",
        "hopper-stand", "quadruped-walk", "reacher-easy", "walker-walk",
    }  # fmt: skip
    assert "results/dmc_results.txt" in mrq.source and "action repeat 2" in mrq.source
    assert "UTD 2" in simba.source and "action repeat 2" in simba.source
    assert "UTD 10" in bro.source and "no action repeat" in bro.source and "5 where" in bro.source


def test_the_dmc28_references_are_the_shared_tables_figures():
    """Every figure of REFERENCES.md's 28-task table (its copy in tests/data: the shared
    file lies outside the repository)."""
    path = ROOT / "tests" / "data" / "dmc28_references.md"
    text = path.read_text().split("## DM Control Suite, all 28 state tasks, at 100k frames")[1]
    header = "| task | MR.Q | SimbaV2 | BRO |"
    rows = [r for r in table_rows(text, header) if not r.startswith("| **")]
    assert [r.split(" | ")[0][2:] for r in rows] == DMC28
    references = results.SUITES["dmc28"].references
    for row in rows:
        task, *columns = [c.strip() for c in row.strip("|").split("|")]
        for ref, published in zip(references, columns, strict=True):
            if published == "–":
                assert task not in ref.values, (ref.column, task)
                continue
            mean, _, spread, *mark = published.split()
            assert ref.values[task] == (float(mean), float(spread)), (ref.column, task)
            assert ref.marks.get(task) == (mark[0] if mark else None), (ref.column, task)


def main_rows(table: str) -> list[str]:
    """The rows of a table's main Markdown table (not the aggregates' below it)."""
    return table_rows(
        table, next(line for line in table.splitlines() if line.startswith("| task |"))
    )


def write_dmc28_cell(
    out: Path, task: str, learner: str, finals: list[float], loop: dict | None = None
) -> None:
    """A finished cell of the dmc28 table (in place of any there), its config.json recording
    `DMC_ENTRY` and the loop settings `loop`."""
    shutil.rmtree(out / task / learner, ignore_errors=True)
    write_run(out / task / learner, finals, 100_000)
    config = {"preset": DMC_ENTRY, "loop": loop or {}, "algo": {}, "sweep": {}}
    (out / task / learner / "config.json").write_text(json.dumps(config))


def test_the_dmc28_table_gives_each_cells_compute_and_the_mean_over_the_tasks(
    tmp_path, monkeypatch
):
    out = tmp_path / "dmc28"
    repeat2 = {"max_timesteps": 100_000, "start_timesteps": 5000, "action_repeat": 2}
    older = {"max_timesteps": 100_000, "start_timesteps": 5000}  # before action_repeat: 1
    write_dmc28_cell(out, "acrobot-swingup", "TD3", [0.0, 0.0, 0.0])  # a return of 0
    write_dmc28_cell(out, "cartpole-swingup", "TD3", [800.0, 820.0, 840.0], older)
    write_dmc28_cell(out, "walker-walk", "TD3", [900.0, 900.0, 900.0], repeat2)
    write_dmc28_cell(out, "cartpole-swingup", "SAC", [600.0, 600.0, 600.0])
    # Few resamples: the aggregates block (tests/test_aggregates.py) only has to be there.
    args = results.parse_args(["--suite", "dmc28", "--out", str(out), "--bootstrap_reps", "20"])
    path = results.write_table(args)
    assert path == tmp_path / "dmc28.md"
    table = path.read_text()
    assert (
        "| task | TD3 | SAC | MR.Q, 100k | SimbaV2, 100k | BRO, 100k | TD3: wall time, updates "
        "| SAC: wall time, updates |" in table
    )
    # 0 is a return (held out: the entry was not chosen on acrobot-swingup); no published
    # SimbaV2 or BRO run there. write_run's wall time is 600 s.
    zero = "| acrobot-swingup | 0 ± 0 (held out) | not run yet | 56 ± 51 | - | - | 10 min | - |"
    assert zero in table
    # 100k frames, decisions every frame, learning from frame 5000: 95,001 updates.
    assert (
        "| cartpole-swingup | 820 ± 50 (held out) | 600 ± 0 (held out) | 853 ± 8 | 861 ± 13 "
        "| 872 ± 6 † | 10 min; 95.0k updates (action repeat 1) | 10 min |" in table
    )
    # Decisions every 2 frames, learning from frame 5000 (decision 2,500) to 100k (50,000).
    assert (
        "| walker-walk | 900 ± 0 (panel) | not run yet | 891 ± 83 | 962 ± 6 | 963 ± 8 † "
        "| 10 min; 47.5k updates (action repeat 2) | - |" in table
    )
    assert "| fish-swim | not run yet | not run yet | 122 ± 52 | - | - | - | - |" in table
    # TD3 on 3 tasks: (0 + 820 + 900) / 3 = 573.3; MR.Q on them (56 + 853 + 891) / 3 = 600;
    # SimbaV2 and BRO published no acrobot-swingup. SAC on one: MR.Q 853, SimbaV2 861, BRO 872.
    # MR.Q over all 28: 466, no one else has all of them.
    rows = main_rows(table)
    assert [row.split(" | ")[0][2:] for row in rows[:28]] == DMC28
    assert rows[28:] == [
        "| mean over 3 of 28 tasks (partial: TD3) | 573 | - | 600 | - | - |  |  |",
        "| mean over 1 of 28 tasks (partial: SAC) | - | 600 | 853 | 861 | 872 |  |  |",
        "| **mean over the 28 tasks** | - | - | 466 | - | - |  |  |",
    ]
    assert "- BRO: BRO (Nauman et al., NeurIPS 2024)" in table and "5 where marked †" in table
    assert "Compute (wall time of each population run, 3 agents" in table
    assert "4 cells, 0.7 hours in all" in table  # 4 x 600 s
    assert "MR.Q's mean over the 28 tasks, 466 at 100k frames, is 774 at 500k" in table

    # TD3 on all 28 (task i returning 10 i: mean 10 x 13.5 = 135): its row is the whole;
    # SAC's stays partial. The entry was tuned on cheetah-run, finger-spin and walker-walk
    # (tasks 6, 11 and 27), so TD3 also has a row over its 25 held-out tasks: 10 x (378 -
    # 44) / 25 = 133.6; MR.Q over the same 25: (13049 - 648 - 733 - 891) / 25 = 431.1.
    for i, task in enumerate(DMC28):
        write_dmc28_cell(out, task, "TD3", [10.0 * i] * 3)
    table = results.write_table(args).read_text()
    rows = main_rows(table)
    assert rows[28:] == [
        "| mean over 1 of 28 tasks (partial: SAC) | - | 600 | 853 | 861 | 872 |  |  |",
        "| mean over TD3's 25 held-out tasks | 134 | - | 431 | - | - |  |  |",
        "| **mean over the 28 tasks** | 135 | - | 466 | - | - |  |  |",
    ]
    assert "also has a row over its held-out tasks" in table
    assert "29 cells, 4.8 hours in all" in table  # 29 x 600 s
    # The figure: 28 panels in 7 rows of 4.
    from matplotlib.figure import Figure

    drawn = []
    monkeypatch.setattr(Figure, "savefig", lambda fig, path: drawn.append(fig))
    results.write_figure(args)
    assert drawn[0].axes[0].get_subplotspec().get_gridspec().get_geometry() == (7, 4)
    assert len([ax for ax in drawn[0].axes if ax.get_title()]) == 28

    # Learners with the same tasks share a partial row.
    shutil.rmtree(out)
    write_dmc28_cell(out, "cartpole-swingup", "TD3", [800.0, 820.0, 840.0])
    write_dmc28_cell(out, "cartpole-swingup", "SAC", [600.0, 600.0, 600.0])
    table = results.write_table(args).read_text()
    rows = main_rows(table)
    assert rows[28:] == [
        "| mean over 1 of 28 tasks (partial: TD3, SAC) | 820 | 600 | 853 | 861 | 872 |  |  |",
        "| **mean over the 28 tasks** | - | - | 466 | - | - |  |  |",
    ]


def test_the_updates_a_host_loop_cell_made_are_the_loops_own_count(tmp_path):
    """`updates_of` against the host loop's rule, stepped here: a decision every K frames,
    U updates at each decision from the one whose frame count reaches start_timesteps."""
    cases = ((100_000, 5000, 1, 1), (100_000, 5000, 2, 1), (1000, 255, 3, 1), (100_000, 5000, 2, 2))
    for frames, start, repeat, per_decision in cases:
        steps = updates = 0
        while steps < frames:
            steps += repeat
            updates += per_decision * (steps >= start)
        config = {"loop": {"max_timesteps": frames, "start_timesteps": start}}
        if repeat != 1:  # a run from before `action_repeat` was recorded repeated nothing
            config["loop"]["action_repeat"] = repeat
        if per_decision != 1:  # nor one from before `updates_per_step` more than once
            config["loop"]["updates_per_step"] = per_decision
        (tmp_path / "config.json").write_text(json.dumps(config))
        found = results.updates_of(tmp_path)
        assert found == (updates, repeat, per_decision), (frames, start, repeat, per_decision)
    (tmp_path / "config.json").write_text(json.dumps({"loop": {}}))
    assert results.updates_of(tmp_path) is None


def test_the_dmc28_suite_skips_finished_cells_and_trains_the_rest(tmp_path, monkeypatch, capsys):
    """The same machinery as the other tables: a cell whose results ran the settings it
    resolves to now is skipped, the others train (and `make dmc-suite` runs this suite)."""
    makefile = (ROOT / "Makefile").read_text()
    assert "dmc-suite: init\n\t$(BIN)/python -m jax_rl.tools.results --suite dmc28 " in makefile
    assert "dmc-suite" in next(line for line in makefile.splitlines() if ".PHONY" in line)
    out = tmp_path / "dmc28"
    argv = ["--suite", "dmc28", "--tasks", "hopper-hop,walker-stand", "--learners", "SAC"]
    argv += ["--runs_dir", str(tmp_path / "runs"), "--out", str(out), "--bootstrap_reps", "20"]
    args = results.parse_args(argv)
    now = results.resolved_settings(args, "hopper-hop", "SAC")
    write_run(out / "hopper-hop" / "SAC", [1.0, 2.0, 3.0], 100_000)
    config = {**now, "preset": DMC_ENTRY}
    (out / "hopper-hop" / "SAC" / "config.json").write_text(json.dumps(config))
    trained = []
    monkeypatch.setattr(results, "train_cell", lambda *a: trained.append(a[1:3]) or True)
    assert results.main(argv) == 0
    assert trained == [("walker-stand", "SAC")]
    assert "SAC on hopper-hop: already in" in capsys.readouterr().out
    table = (tmp_path / "dmc28.md").read_text()
    assert "| hopper-hop | not run yet | 2 ± 2 (held out) |" in table
    # No TD3 cell yet: no row of TD3's mean over none of the tasks.
    rows = main_rows(table)
    assert rows[28:] == [
        "| mean over 1 of 28 tasks (partial: SAC) | - | 2 | 17 | 47 | 220 |  |  |",
        "| **mean over the 28 tasks** | - | - | 466 | - | - |  |  |",
    ]
