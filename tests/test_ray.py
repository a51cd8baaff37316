"""--engine ray: results cells and sub-populations as Ray tasks, on a local Ray of 2 CPUs.

One Ray instance, started here, serves the module: the drivers under test run as
subprocesses that join it with --address (as a cluster's users do). Its temporary files go
to a folder of the test's, its token stays in the environment (nothing under ~/.ray), and
it reports no usage statistics. Each run is tiny (300 steps, 32-32 networks, compilation
is most of its 20 seconds), so the module costs about two minutes on 2 cores.
"""

import csv
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from jax_rl import main_dm_control
from jax_rl.run import cluster, driver
from jax_rl.tools import results

ray = pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parent.parent
TINY = (
    "--start_timesteps 100 --batch_size 32 --hidden_sizes 32,32 --eval_freq 100 "
    "--eval_episodes 1 --log_freq 100"
)
TASKS = ("cartpole-swingup", "cartpole-balance")
KILLED = "TD3-cartpole-swingup"  # the cell whose worker is killed after its step-200 checkpoint


@pytest.fixture(scope="module")
def local_ray():
    """A 2-CPU Ray on this machine: (its address, the environment its drivers need)."""
    temp = tempfile.mkdtemp(prefix="ray-")  # short: Ray's socket paths must stay short
    env = {"RAY_AUTH_TOKEN": secrets.token_hex(16), "RAY_USAGE_STATS_ENABLED": "0"}
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        ray.init(num_cpus=2, include_dashboard=False, _temp_dir=temp, logging_level="ERROR")
        yield ray.get_runtime_context().gcs_address, {**os.environ, **env}
    finally:
        ray.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(temp, ignore_errors=True)


def command(module: str, argv: list[str]) -> list[str]:
    return [sys.executable, "-m", module, *argv]


def run(
    argv: list[str], env: dict, module: str = "jax_rl.tools.results"
) -> subprocess.CompletedProcess:
    result = subprocess.run(
        command(module, argv), cwd=ROOT, capture_output=True, text=True, timeout=600, env=env
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def suite_flags(folder: Path) -> list[str]:
    return [
        "--tasks", ",".join(TASKS), "--learners", "TD3", "--seeds", "1", "--steps", "300",
        "--checkpoint_every", "100", "--runs_dir", str(folder / "runs"),
        "--out", str(folder / "out" / "dmc0k"), "--flags", TINY,
    ]  # fmt: skip


POPULATION = [
    "--policy", "TD3", "--preset", "paper", "--num_seeds", "2", "--tau", "0.005,0.05",
    "--max_timesteps", "300", "--checkpoint_every", "100", "--no_progress", *TINY.split(),
]  # fmt: skip


@pytest.fixture(scope="module")
def local_runs(tmp_path_factory):
    """With --engine local: the 2-task suite (its cells one after the other) and the
    population of 4 in one run, side by side (a core each): their folders."""
    suite, population = tmp_path_factory.mktemp("local"), tmp_path_factory.mktemp("one")
    commands = [
        command("jax_rl.tools.results", suite_flags(suite)),
        command("jax_rl.main_dm_control", [*POPULATION, "--save_dir", str(population)]),
    ]
    runs = [
        subprocess.Popen(c, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for c in commands
    ]
    for process in runs:
        output, _ = process.communicate(timeout=600)
        assert process.returncode == 0, output.decode()
    return suite, population


@pytest.fixture(scope="module")
def suites(local_ray, local_runs, tmp_path_factory):
    """The 2-task suite with --engine local, and with --engine ray (one cell's worker killed
    after its checkpoint at step 200, on its first attempt only): their folders."""
    address, env = local_ray
    on_ray = tmp_path_factory.mktemp("ray")
    killing = {**env, cluster.KILL_AT_STEP: "200", cluster.KILL_JOB: KILLED}
    output = run([*suite_flags(on_ray), "--engine", "ray", "--address", address], killing)
    (on_ray / "driver.out").write_text(output.stdout)
    return local_runs[0], on_ray


def events(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "ray-events.jsonl").read_text().split("\n")[:-1]]


def evaluations(cell: Path) -> list[dict]:
    with next(cell.rglob("evaluations.csv")).open() as f:
        return [{k: v for k, v in row.items() if k != "wall_time"} for row in csv.DictReader(f)]


def without_compute(table: str) -> list[str]:
    return [line for line in table.split("\n") if not line.startswith("Compute")]


def test_two_cells_train_at_once_on_the_two_cores(suites):
    _, on_ray = suites
    spans = {}
    for event in events(on_ray / "runs"):
        start, end = spans.get(event["key"], (None, None))
        if event["kind"] == "started":
            spans[event["key"]] = (start or event["time"], end)
        if event["kind"] == "ended":
            spans[event["key"]] = (start, event["time"])
        if event["kind"] == "started" and event["attempt"] == 1:
            assert event["detail"]["core"] in (0, 1)  # each pinned to a core of its own
    (a_start, a_end), (b_start, b_end) = spans.values()
    overlap = min(a_end, b_end) - max(a_start, b_start)
    print(f"cells {spans}; overlap {overlap:.1f} s")
    assert overlap > 0.5 * min(a_end - a_start, b_end - b_start)


def test_the_ray_table_is_the_local_table_with_the_same_evaluations(suites):
    local, on_ray = suites
    for task in TASKS:
        ours, theirs = (
            on_ray / "out" / "dmc0k" / task / "TD3",
            local / "out" / "dmc0k" / task / "TD3",
        )
        assert evaluations(ours) == evaluations(theirs)  # as written: bitwise to 6 digits
        assert results.final_returns(ours) == results.final_returns(theirs)
    table, local_table = ((f / "out" / "dmc0k.md").read_text() for f in (on_ray, local))
    assert "| cartpole-swingup |" in table and "| cartpole-balance |" in table
    assert without_compute(table) == without_compute(local_table)  # all but the wall times
    assert (on_ray / "out" / "dmc0k.png").exists()
    driver = (on_ray / "driver.out").read_text()
    assert "[2/2] TD3 on cartpole-balance: started on" in driver
    assert "[2/2] TD3 on cartpole-balance: done in" in driver


def test_a_killed_worker_is_retried_and_continues_from_its_checkpoint(suites):
    _, on_ray = suites
    starts = [e for e in events(on_ray / "runs") if e["key"] == KILLED and e["kind"] == "started"]
    assert [e["attempt"] for e in starts] == [1, 2]
    assert starts[0]["detail"]["pid"] != starts[1]["detail"]["pid"]  # a new worker process
    assert (
        "[1/2] TD3 on cartpole-swingup: retried (attempt 2)" in (on_ray / "driver.out").read_text()
    )
    log = (on_ray / "runs" / f"{KILLED}.log").read_text()
    assert "resumed from the checkpoint at step 200" in log
    other = [e for e in events(on_ray / "runs") if e["key"] != KILLED and e["kind"] == "started"]
    assert [e["attempt"] for e in other] == [1]  # the other cell ran once, untouched
    # The uninterrupted cell of the local suite: the same evaluations (the test above).


def test_a_population_as_two_tasks_of_two_ranks_as_one_run_of_four(local_ray, local_runs, tmp_path):
    address, env = local_ray
    split = ["--engine", "ray", "--address", address, "--agents_per_worker", "2"]
    # The first part's worker is killed after its step-200 checkpoint, as a cell's above.
    killing = {**env, cluster.KILL_AT_STEP: "200", cluster.KILL_JOB: "agents0-1"}
    argv = [*POPULATION, *split, "--save_dir", str(tmp_path / "two")]
    output = run(argv, killing, "jax_rl.main_dm_control")
    one_dir, two_dir = local_runs[1], tmp_path / "two"
    assert "[1/2] agents0-1: retried (attempt 2)" in output.stdout
    log = (two_dir / "parts" / "agents0-1.log").read_text()
    assert "resumed from the checkpoint at step 200" in log
    assert "4 agents (seeds 0-1; tau in {0.005, 0.05})" in output.stderr
    assert "2 Ray tasks of up to 2 agents" in output.stderr
    one, two = (json.loads((d / "summary.json").read_text()) for d in (one_dir, two_dir))
    folders = [a["folder"] for a in one["agents"]]
    assert [a["folder"] for a in two["agents"]] == folders
    assert sorted(p.name for p in (two_dir / "parts").iterdir() if p.is_dir()) == [
        "agents0-1", "agents2-3"
    ]  # fmt: skip
    # A batch of 2 agents compiles apart from a batch of 4: the same to float rounding
    # (which the CSV's 6 significant digits can show: 52.1931 against 52.193 once).
    for folder in folders:
        ours, theirs = evaluations(two_dir / folder), evaluations(one_dir / folder)
        assert [r["step"] for r in ours] == [r["step"] for r in theirs]
        for mine, other in zip(ours, theirs, strict=True):
            for key in ("return_mean", "return_std"):
                assert float(mine[key]) == pytest.approx(float(other[key]), rel=1e-5, abs=1e-5)
        config = json.loads((two_dir / folder / "config.json").read_text())
        assert config["seed"] == int(folder[-1])
    for ours, theirs in zip(two["agents"], one["agents"], strict=True):
        assert ours["final_return_mean"] == pytest.approx(theirs["final_return_mean"], rel=1e-6)
    ranking = (two_dir / "ranking.md").read_text()
    assert ranking == (one_dir / "ranking.md").read_text()
    config = json.loads((two_dir / "config.json").read_text())
    assert [a["folder"] for a in config["agents"]] == folders


TUNE_SPACE = ROOT / "docs" / "examples" / "tune_cartpole.toml"


def test_a_tune_round_trains_its_populations_as_ray_tasks(local_ray, tmp_path):
    """`python -m jax_rl.tools.tune --engine ray`: a round of 2 trials, one population each
    (--trials_per_worker 1), as 2 Ray tasks at once; the driver tells the study."""
    optuna = pytest.importorskip("optuna")
    address, env = local_ray
    tiny = [
        "study.max_timesteps=200", "study.eval_freq=200", "study.rounds=1",
        "study.trials_per_round=2", "fixed.start_timesteps=100", "fixed.batch_size=32",
        "fixed.hidden_sizes=[32,32]", "fixed.eval_episodes=1", "fixed.log_freq=100",
        "space.n_step.choices=[1]",
    ]  # fmt: skip
    folder = tmp_path / "study"
    engine = ["--engine", "ray", "--address", address, "--trials_per_worker", "1"]
    sets = [arg for item in tiny for arg in ("--set", item)]
    argv = [str(TUNE_SPACE), "--study_dir", str(folder), *engine, *sets]
    output = run(argv, env, "jax_rl.tools.tune")
    assert "round 1 part1 (trials 0) to 200 steps: started on" in output.stdout
    assert "round 1 part2 (trials 1) to 200 steps: started on" in output.stdout
    study = optuna.load_study(
        study_name="td3-cartpole-swingup", storage=f"sqlite:///{folder}/study.db"
    )
    assert [t.state.name for t in study.trials] == ["COMPLETE", "COMPLETE"]
    assert sorted(e["key"] for e in events(folder) if e["kind"] == "started") == [
        "round1-part1", "round1-part2"
    ]  # fmt: skip
    assert "best: trial" in output.stdout and '[named."tuned-td3-cartpole-swingup/' in output.stdout


def one_line_exit_2(call, capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        call()
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err, err
    return err


def test_engine_flags_are_checked_before_anything_runs(capsys):
    def entry_point(*argv):
        return lambda: driver.resolve_settings(
            main_dm_control.build_parser(), main_dm_control.DMControlBackend(), list(argv)
        )

    def table(*argv):
        return lambda: results.parse_args(list(argv))

    assert "--agents_per_worker needs --engine ray" in one_line_exit_2(
        entry_point("--agents_per_worker", "2"), capsys
    )
    assert "--agents_per_worker must be a positive integer" in one_line_exit_2(
        entry_point("--engine", "ray", "--agents_per_worker", "0"), capsys
    )
    assert "--address needs --engine ray" in one_line_exit_2(
        table("--address", "127.0.0.1:6379"), capsys
    )
    assert "expected host:port" in one_line_exit_2(
        table("--engine", "ray", "--address", "nowhere"), capsys
    )
    assert "not into --flags" in one_line_exit_2(
        table("--engine", "ray", "--flags", "--engine ray"), capsys
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["jax_rl.tools.results", "--runs_dir", "runs", "--out", "out/dmc100k"],
        ["jax_rl.main_dm_control", "--num_seeds", "4", "--no_progress"],
        ["jax_rl.tools.tune", str(ROOT / "docs" / "examples" / "tune_cartpole.toml")],
    ],
    ids=["results", "population", "tune"],
)
def test_an_unreachable_address_is_one_line_and_exit_2(argv, tmp_path):
    module, *flags = argv
    result = subprocess.run(
        [sys.executable, "-m", module, *flags, "--engine", "ray", "--address", "127.0.0.1:1"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().split("\n")
    assert len(lines) == 1 and lines[0].startswith("error: --address 127.0.0.1:1: cannot reach")
    assert not (tmp_path / "runs").exists()  # nothing written, nothing trained
