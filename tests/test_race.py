"""`make race` without SBX: the tables from hand-made curves, the refusals before anything
starts, and the race's own process handling with stand-in sides (a few lines of Python
that write what each side writes, or fail)."""

import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from jax_rl.tools import race
from jax_rl.tools.race import Evaluation

ROOT = Path(__file__).resolve().parents[1]
HAVE_SBX = importlib.util.find_spec("sbx") is not None

# Ours climbs early and dips at the end; SBX starts later and climbs slower.
OURS = [
    Evaluation(0, 10.0, -100.0, 0.0),
    Evaluation(5000, 60.0, 2500.0, 10.0),
    Evaluation(10000, 110.0, 4100.0, 5.0),
    Evaluation(15000, 160.0, 3900.0, 1.0),
]
SBX = [
    Evaluation(0, 12.0, -50.0, 0.0),
    Evaluation(5000, 200.0, 1500.0, 0.0),
    Evaluation(10000, 400.0, 2000.0, 0.0),  # exactly on the threshold: reached
]


def test_time_to_reach_is_the_first_evaluation_at_or_above():
    assert race.time_to_reach(OURS, 2000) == OURS[1]
    assert race.time_to_reach(OURS, 4000) == OURS[2]  # the dip after it does not matter
    assert race.time_to_reach(OURS, 6000) is None
    assert race.time_to_reach(SBX, 2000) == SBX[2]
    assert race.time_to_reach([], 2000) is None


def test_the_tables_of_two_curves():
    assert race.reach_rows(OURS, SBX, (2000, 4000, 6000)) == [
        "| return reached | ours | SBX |",
        "|---|---|---|",
        "| 2,000 | 60 s (step 5,000) | 400 s (step 10,000) |",
        "| 4,000 | 110 s (step 10,000) | not reached |",
        "| 6,000 | not reached | not reached |",
    ]
    assert race.curve_rows(OURS, SBX) == [
        "| step | our return | our wall s | SBX return | SBX wall s |",
        "|---|---|---|---|---|",
        "| 0 | -100 | 10 | -50 | 12 |",
        "| 5,000 | 2,500 | 60 | 1,500 | 200 |",
        "| 10,000 | 4,100 | 110 | 2,000 | 400 |",
        "| 15,000 | 3,900 | 160 | - | - |",  # a step one side did not evaluate
    ]


def about(**changes):
    return {
        "task": "HalfCheetah-v5",
        "steps": 15000,
        "seed": 0,
        "eval_every": 5000,
        "eval_episodes": 10,
        "machine": {"cpu": "CPU", "cores": 2, "jax": "0.10", "python": "3.11",
                    "accelerator": "none"},
        "pinning": "ours pinned to core 0, SBX to core 1 (taskset -c)",
        "commit": "abc1234",
        "date": "2026-12-01 10:00 UTC",
        "command": "python -m jax_rl.tools.race",
        "side_commands": {"ours": "python ours", "sbx": "python sbx"},
        "versions": {"sbx": "0.28.0"},
        "settings": {"ours": {"preset": "gymnasium/*"}, "sbx": {"net_arch_critic": [1024, 1024]}},
        **changes,
    }  # fmt: skip


def test_race_md_holds_the_tables_and_what_the_race_ran_on():
    text = race.markdown(OURS, SBX, about(), thresholds=(2000, 8000))
    assert "| 10,000 | 4,100 | 110 | 2,000 | 400 |" in text
    assert "| 8,000 | not reached | not reached |" in text
    assert "mean of 10 episodes of the deterministic policy, every 5,000 steps" in text
    assert "ours pinned to core 0, SBX to core 1" in text
    assert 'preset "gymnasium/*"' in text and "net_arch_critic [1024, 1024]" in text
    assert "commit abc1234, 2026-12-01 10:00 UTC" in text
    assert "`python -m jax_rl.tools.race`" in text
    assert "mean of 1 episode of" in race.markdown(OURS, SBX, about(eval_episodes=1))


def test_a_curve_is_read_while_it_is_being_written(tmp_path):
    text = "step,wall_time,return_mean,return_std\n0,1.5,-3,0\n5000,9.25,40,2\n10000,12"
    assert race.parse_curve(text) == [Evaluation(0, 1.5, -3, 0), Evaluation(5000, 9.25, 40, 2)]
    assert race.parse_curve("step,wall_time,return_mean,return_std\n") == []
    assert race.read_curve(tmp_path / "none.csv") == []
    assert race.progress_line("sbx", [], 100) is None
    line = race.progress_line("sbx", race.parse_curve(text), 100_000)
    assert line == "sbx: step 5,000 / 100,000, return 40 at 9 s"


def test_sbx_evaluations_are_written_as_ours_are(tmp_path):
    """SBX's side writes the format the race reads for ours: 6 significant digits, the
    standard deviation over the episodes (not the sample one)."""
    log = race.EvaluationLog(tmp_path / "evaluations.csv", start=time.perf_counter())
    log.write(0, [1.0, 3.0])
    log.write(5000, [1234.56789])
    (first, second) = race.read_curve(tmp_path / "evaluations.csv")
    assert (first.step, first.return_mean, first.return_std) == (0, 2.0, 1.0)
    assert (second.step, second.return_mean, second.return_std) == (5000, 1234.57, 0.0)
    assert 0 <= first.wall_time <= second.wall_time < 60


def test_sbx_settings_are_read_from_the_model_as_json():
    policy = SimpleNamespace(net_arch_qf=[1024, 1024], batch_norm_momentum=np.float32(0.99))
    model = SimpleNamespace(policy=policy, batch_size=256, policy_delay=3, train_freq=object())
    settings = race.sbx_settings(model)
    assert settings["net_arch_critic"] == [1024, 1024] and settings["batch_size"] == 256
    assert settings["batch_norm_momentum"] == pytest.approx(0.99)
    assert settings["net_arch_actor"] is None  # an attribute this SBX lacks is recorded so
    assert isinstance(settings["train_freq"], str)
    json.dumps(settings)


@pytest.mark.parametrize(
    "flags, says",
    [
        (["--steps", "1000", "--eval_every", "5000"], "--steps (1,000) must be at least"),
        (["--steps", "0"], "--steps must be a positive integer"),
        (["--eval_every", "-5"], "--eval_every must be a positive integer"),
        (["--eval_episodes", "0"], "--eval_episodes must be a positive integer"),
        (["--seed", "-1"], "--seed must be 0 or more"),
        (["--poll", "0"], "--poll must be positive"),
        (["--task", "NoSuchTask-v0"], "--task NoSuchTask-v0: gymnasium does not know it"),
    ],
    ids=["steps-below-eval", "steps", "eval_every", "episodes", "seed", "poll", "task"],
)
def test_bad_input_exits_2_with_one_line_before_anything_starts(
    flags, says, tmp_path, monkeypatch, capsys
):
    def no_process(*args, **kwargs):
        raise AssertionError("a side was started")

    monkeypatch.setattr(race.subprocess, "Popen", no_process)
    runs = tmp_path / "runs"
    assert race.main([*flags, "--runs_dir", str(runs)]) == 2
    out, err = capsys.readouterr()
    assert err.startswith(f"error: {says}") and err.count("\n") == 1 and out == ""
    assert not runs.exists()


@pytest.mark.skipif(HAVE_SBX, reason="sbx is installed here; the refusal is CI's case")
def test_without_sbx_the_race_and_its_side_refuse_with_the_make_race_hint(tmp_path):
    for side in ([], ["--side", "sbx", "--save_dir", str(tmp_path / "sbx")]):
        done = subprocess.run(
            [sys.executable, "-m", "jax_rl.tools.race", "--runs_dir", str(tmp_path), *side],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and "run `make race`" in done.stderr
        assert list(tmp_path.iterdir()) == []


def stand_in(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def writer(folder: Path, curve: list[Evaluation], extra: dict[str, dict]) -> list[str]:
    """A side that writes `curve` as evaluations.csv into `folder`, and `extra` files."""
    header = ",".join(race.COLUMNS) + "\n"
    rows = "".join(f"{e.step},{e.wall_time},{e.return_mean},{e.return_std}\n" for e in curve)
    return stand_in(f"""
        import json, pathlib
        folder = pathlib.Path({str(folder)!r})
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "evaluations.csv").write_text({header + rows!r})
        for name, content in {extra!r}.items():
            (folder / name).write_text(json.dumps(content))
        """)  # fmt: skip


def test_a_failed_side_stops_the_other_and_shows_its_log_tail(tmp_path, monkeypatch, capsys):
    sides = {
        "ours": stand_in("import sys, time; time.sleep(0.3); print('boom: bad flag'); sys.exit(3)"),
        "sbx": stand_in("import time; time.sleep(60)"),
    }
    monkeypatch.setattr(race, "side_commands", lambda args, runs_dir: sides)
    args = race.parse(["--runs_dir", str(tmp_path), "--out", str(tmp_path / "out"), "--poll", "30"])
    start = time.perf_counter()
    assert race.race(args, []) == 1
    # Seen when it ends, not at the next progress poll; the sleeping side stopped, not awaited.
    assert time.perf_counter() - start < 15
    err = capsys.readouterr().err
    assert err.startswith("error: the ours side failed") and "boom: bad flag" in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_a_race_of_stand_ins_writes_the_table_the_record_and_the_plot(
    tmp_path, monkeypatch, capsys
):
    runs, out = tmp_path / "runs", tmp_path / "out"
    config = {"preset": {"name": "gymnasium/*", "applied": {"actor_lr": 3e-4}}, "flags": {}}
    sides = {
        "ours": writer(runs / "ours", OURS, {"config.json": config}),
        "sbx": writer(runs / "sbx", SBX, {"settings.json": {"policy_delay": 3}}),
    }
    monkeypatch.setattr(race, "side_commands", lambda args, runs_dir: sides)
    argv = ["--runs_dir", str(runs), "--out", str(out), "--poll", "0.1", "--steps", "15000"]
    assert race.race(race.parse(argv), argv) == 0
    text = (out / "race.md").read_text()
    assert "| 15,000 | 3,900 | 160 | - | - |" in text and "| 2,000 | 60 s (step 5,000) |" in text
    record = json.loads((out / "race.json").read_text())
    assert record["curves"]["sbx"][2] == SBX[2]._asdict()
    assert record["settings"]["sbx"] == {"policy_delay": 3}
    assert record["settings"]["ours"]["preset"] == "gymnasium/*"
    assert record["command"] == "python -m jax_rl.tools.race " + " ".join(argv)
    assert (out / "race.png").stat().st_size > 0
    assert "ours: step 15,000 / 15,000, return 3,900 at 160 s" in capsys.readouterr().out


def test_a_race_stopped_by_sigterm_stops_both_sides(tmp_path, monkeypatch):
    def sleeper(name: str) -> list[str]:
        pid_file = tmp_path / f"{name}.pid"
        return stand_in(f"""
            import os, pathlib, time
            pathlib.Path({str(pid_file)!r}).write_text(str(os.getpid()))
            time.sleep(60)
            """)  # fmt: skip

    monkeypatch.setattr(
        race, "side_commands", lambda args, runs_dir: {n: sleeper(n) for n in race.SIDES}
    )
    args = race.parse(["--runs_dir", str(tmp_path / "runs"), "--poll", "0.1"])
    before = signal.getsignal(signal.SIGTERM)

    def stop_once_both_run() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if all((tmp_path / f"{name}.pid").exists() for name in race.SIDES):
                break
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=stop_once_both_run, daemon=True).start()
    with pytest.raises(SystemExit) as stopped:
        race.race(args, [])
    assert stopped.value.code == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) == before
    for name in race.SIDES:
        pid = int((tmp_path / f"{name}.pid").read_text())
        with pytest.raises(ProcessLookupError):  # ended and reaped
            os.kill(pid, 0)
