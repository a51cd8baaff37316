"""Hyperparameter search (`python -m jax_rl.tools.tune`): a bad space is one line and exit 2
with nothing written; rounds split by static flags; the pruner's decisions reach the study;
and a search killed by SIGKILL in its second round continues with every trial once.

The search runs the example space file (docs/examples/tune_cartpole.toml) at a tiny size:
2 rounds of 2 trials, 400 steps each, 32-32 networks; compilation is most of its cost, and
the rounds after the first load their programs from the study's compilation cache.
"""

import csv
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

optuna = pytest.importorskip("optuna")

from jax_rl.tools import search_space, tune  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SPACE = ROOT / "docs" / "examples" / "tune_cartpole.toml"
TINY = [
    "study.max_timesteps=400", "study.eval_freq=200", "study.rounds=2",
    "study.trials_per_round=2", "fixed.start_timesteps=100", "fixed.batch_size=32",
    "fixed.hidden_sizes=[32,32]", "fixed.eval_episodes=1", "fixed.log_freq=100",
    "space.n_step.choices=[1]", "pruner.warmup_steps=0",
]  # fmt: skip


def sets(items: list[str]) -> list[str]:
    return [arg for item in items for arg in ("--set", item)]


@pytest.mark.parametrize(
    "change, message",
    [
        (["space.learning_rate.low=1e-4", "space.learning_rate.high=1e-3"],
         "[space.learning_rate]: --learning_rate is not a training flag of "
         "jax_rl/main_dm_control.py"),
        (["space.actor_lr.low=1e-2"], "[space.actor_lr]: empty range: low (0.01) must be "
         "below high (0.003)"),
        (["space.tau.low=0.0"], "[space.tau]: log = true needs low > 0, got low = 0.0"),
        (["space.tau.high=2.0"], "[space.tau] value 2.0: TD3 tau must be in [0, 1], got 2.0"),
        (["space.alpha_lr.choices=[1e-4]"], "--alpha_lr does not apply to --policy TD3"),
        (["fixed.max_timesteps=1000"], "[fixed] max_timesteps: max_timesteps is set by the "
         "study ([study] max_timesteps)"),
        (["study.pruner=hyperband"], "pruner must be one of median, percentile, none"),
        (["--trials_per_worker", "2"], "--trials_per_worker needs --engine ray"),
    ],
)  # fmt: skip
def test_a_bad_space_is_one_line_and_exit_2_and_writes_nothing(change, message, tmp_path, capsys):
    folder = tmp_path / "study"
    flags = [arg for item in change for arg in ([item] if "=" not in item else ["--set", item])]
    code = tune.main([str(SPACE), "--study_dir", str(folder), *sets(TINY), *flags])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert message in err, err
    assert not folder.exists() and not any(tmp_path.iterdir())


def test_a_round_trains_one_population_per_value_of_its_static_flags(tmp_path):
    wide = [item for item in TINY if not item.startswith("space.n_step")]  # n_step in {1, 3}
    space = search_space.load(SPACE, [*wide, "study.trials_per_round=6"])
    assert {p.name for p in space.static} == {"n_step"}
    assert {p.name for p in space.traced} == {"actor_lr", "critic_lr", "tau", "policy_noise"}
    study = tune.open_study(space, tmp_path, 1)
    parts = tune.plan_round(study, space, 1, per_worker=None)
    assert sorted(n for p in parts for n in p.trials) == list(range(6))
    for part in parts:  # each population shares its static values: one program
        assert {study.trials[n].params["n_step"] for n in part.trials} == {part.static["n_step"]}
    assert len({p.static["n_step"] for p in parts}) == len(parts)
    # The plan is stored: asked again (a resumed search) it is the same, with no new trial.
    again = tune.plan_round(tune.open_study(space, tmp_path, 1), space, 1, per_worker=None)
    assert again == parts and len(study.trials) == 6
    split = tune.plan_round(study, space, 2, per_worker=2)  # --engine ray --trials_per_worker 2
    assert all(len(p.trials) <= 2 for p in split) and len(study.trials) == 12


class FakeEngine:
    """Writes each chunk's evaluations as `returns[trial](step)` instead of training."""

    def __init__(self, returns):
        self.returns, self.chunks = returns, []

    def train(self, chunks, events):
        for chunk in chunks:
            self.chunks.append((chunk.key, chunk.end))
            for agent in chunk.agents:
                folder = chunk.part_dir / agent.folder("TD3")
                folder.mkdir(parents=True, exist_ok=True)
                with (folder / "evaluations.csv").open("w") as f:
                    f.write("step,wall_time,return_mean,return_std\n")
                    for step in range(0, chunk.end + 1, 200):
                        f.write(f"{step},0,{self.returns[agent.trial](step)},0\n")
        return {chunk.key: 0 for chunk in chunks}


def test_the_pruner_stops_weak_trials_and_their_population_with_them(tmp_path):
    space = search_space.load(SPACE, [*TINY, "study.pruner=median", "study.rounds=3"])
    state = optuna.trial.TrialState
    strong = lambda step: 100.0 + step  # noqa: E731
    weak = lambda step: 1.0  # noqa: E731
    diverged = lambda step: float("nan") if step == 200 else 1.0  # noqa: E731
    engine = FakeEngine({0: strong, 1: strong, 2: weak, 3: strong, 4: weak, 5: diverged})
    for number in (1, 2, 3):
        study = tune.open_study(space, tmp_path, number)
        tune.train_round(study, space, tmp_path, number, None, engine)
    trials = study.trials
    assert [t.state for t in trials[:2]] == [state.COMPLETE, state.COMPLETE]  # no history yet
    assert [t.state for t in trials[2:4]] == [state.PRUNED, state.COMPLETE]  # 1 < median 300
    assert trials[2].user_attrs["pruned_at"] == 200 and trials[2].intermediate_values == {200: 1}
    assert trials[3].value == 500.0 and trials[3].intermediate_values == {200: 300, 400: 500}
    # Round 3: one pruned, one diverged; nothing left to train, so its 400-step chunk never ran.
    assert [t.state for t in trials[4:]] == [state.PRUNED, state.FAIL]
    assert trials[5].user_attrs["diverged_at"] == 200
    assert ("round3-part1", 400) not in engine.chunks and ("round2-part1", 400) in engine.chunks


def round_has_reported(db: Path, number: int) -> bool:
    """Whether a trial of round `number` has an evaluation in the study (read-only)."""
    if not db.exists():
        return False
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as connection:
            (count,) = connection.execute(
                "SELECT COUNT(*) FROM trial_intermediate_values v JOIN trial_user_attributes a "
                "ON v.trial_id = a.trial_id WHERE a.key = 'round' AND a.value_json = ?",
                (json.dumps(number),),
            ).fetchone()
    except sqlite3.OperationalError:  # the tables are not created yet
        return False
    return count > 0


def snapshot(trial) -> tuple:
    return (trial.number, trial.state, trial.value, trial.params, trial.intermediate_values,
            trial.user_attrs, trial.datetime_complete)  # fmt: skip


def test_a_search_killed_in_its_second_round_resumes_with_every_trial_once(tmp_path):
    folder = tmp_path / "study"
    command = [sys.executable, "-m", "jax_rl.tools.tune", str(SPACE), "--study_dir", str(folder),
               *sets([*TINY, "study.pruner=none"])]  # fmt: skip
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    log = (tmp_path / "killed.log").open("w")
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while not round_has_reported(folder / tune.STUDY_DB, 2):  # round 2's first chunk is told
        assert process.poll() is None, (tmp_path / "killed.log").read_text()
        assert time.monotonic() < deadline
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)
    assert process.wait() == -signal.SIGKILL
    url = tune.storage_url(folder)
    name = "td3-cartpole-swingup"
    before = optuna.load_study(study_name=name, storage=url).trials
    assert [t.user_attrs["round"] for t in before] == [1, 1, 2, 2]
    assert [t.state.name for t in before] == ["COMPLETE", "COMPLETE", "RUNNING", "RUNNING"]

    resumed = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert "round 2/2 (continued)" in resumed.stderr and "round 1/2" not in resumed.stderr
    trials = optuna.load_study(study_name=name, storage=url).trials
    assert [t.number for t in trials] == [0, 1, 2, 3]  # four trials, none asked twice
    assert [t.state.name for t in trials] == ["COMPLETE"] * 4
    assert [snapshot(t) for t in trials[:2]] == [snapshot(t) for t in before[:2]]
    for trial, earlier in zip(trials[2:], before[2:], strict=True):
        assert trial.params == earlier.params and sorted(trial.intermediate_values) == [200, 400]
    part = folder / "round002" / "part1"
    assert "resumed from the checkpoint at step" in (folder / "round002" / "part1.log").read_text()
    for trial in trials:
        rows = evaluations(folder / f"round{trial.user_attrs['round']:03d}" / "part1", trial.number)
        assert [step for step, _ in rows] == [0, 200, 400]  # each evaluation once
        assert trial.value == pytest.approx(rows[-1][1])
    assert part.is_dir()

    # The best trial as a preset entry that the presets' own checks accept.
    entry = resumed.stdout.split("):\n\n", 1)[1]
    assert entry == (folder / "best.toml").read_text()
    ((name_, table),) = tomllib.loads(entry)["named"].items()
    assert name_ == "tuned-td3-cartpole-swingup/dm_control/cartpole-swingup"
    best = max(trials, key=lambda t: t.value)
    assert {k: table[k] for k in best.params} == best.params
    assert table["hidden_sizes"] == [32, 32] and "eval_episodes" not in table
    check_preset(name_, table)


def evaluations(part: Path, number: int) -> list[tuple[int, float]]:
    with (part / f"trial{number:04d}-seed0" / "evaluations.csv").open() as f:
        return [(int(r["step"]), float(r["return_mean"])) for r in csv.DictReader(f)]


def check_preset(name: str, table: dict) -> None:
    """The entry goes through the presets' loader and the entry point's preset checks."""
    from jax_rl import main_dm_control
    from jax_rl.run import driver, presets

    preset = presets._preset("TD3", name, dict(table))
    parser = main_dm_control.build_parser()
    args = parser.parse_args(["--policy", "TD3", "--preset", name.split("/")[0]])
    applied = driver.apply_preset(parser, args, preset, given=set())
    assert set(applied) == set(table) - {"evidence"}
    assert args.actor_lr == [table["actor_lr"]]
