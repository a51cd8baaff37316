"""--logger (TensorBoard, W&B) and --video_every, on one tiny Gymnasium population run.

The run: two SAC agents on Hopper-v5 (its episodes end within tens of steps, so the
videos are short), 300 steps, evaluations at 0, 150 and 300, W&B offline in a
temporary folder. The same run is then rendered and evaluated (the Gymnasium backend
and a population's --agent).
"""

import csv
import json
import struct
from pathlib import Path

import pytest
from watching import assert_video, render_and_evaluate, run_module

from jax_rl.io import trackers, video
from jax_rl.main_dm_control import main as dm_control_main
from jax_rl.main_gym import main as gym_main
from jax_rl.run import cli

FLAGS = (
    "--env", "Hopper-v5", "--policy", "SAC", "--num_seeds", "2", "--max_timesteps", "300",
    "--start_timesteps", "100", "--batch_size", "32", "--hidden_sizes", "32,32",
    "--eval_freq", "150", "--eval_episodes", "2", "--log_freq", "100", "--no_progress",
    "--logger", "csv,tensorboard,wandb", "--video_every", "150",
)  # fmt: skip
FOLDERS = ("SAC-seed0", "SAC-seed1")


@pytest.fixture(scope="module")
def tracked(tmp_path_factory):
    """(completed process, save_dir, W&B folder) of the run."""
    root = tmp_path_factory.mktemp("tracked")
    wandb_dir = root / "wandb-home"
    wandb_dir.mkdir()
    env = {
        "WANDB_MODE": "offline",
        "WANDB_DIR": str(wandb_dir),
        "WANDB_CACHE_DIR": str(wandb_dir / "cache"),
        "WANDB_CONFIG_DIR": str(wandb_dir / "config"),
        "WANDB_DATA_DIR": str(wandb_dir / "data"),
        "WANDB_SILENT": "true",
    }
    out = root / "run"
    return run_module("jax_rl.main_gym", *FLAGS, "--save_dir", str(out), env=env), out, wandb_dir


def csv_returns(folder: Path) -> dict[int, float]:
    with (folder / "evaluations.csv").open() as f:
        return {int(r["step"]): float(r["return_mean"]) for r in csv.DictReader(f)}


def test_tensorboard_events_hold_every_scalar_and_the_csv_evaluations(tracked):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    result, out, _ = tracked
    assert result.returncode == 0, result.stderr
    for folder in FOLDERS:  # one TensorBoard run per agent, named by its folder
        events = EventAccumulator(str(out / folder))
        events.Reload()
        tags = set(events.Tags()["scalars"])
        assert {"eval/return_mean", "eval/return_std", "loss/critic", "loss/actor",
                "dual/alpha", "perf/steps_per_s"} <= tags, tags  # fmt: skip
        logged = {e.step: e.value for e in events.Scalars("eval/return_mean")}
        expected = csv_returns(out / folder)
        assert sorted(logged) == sorted(expected) == [0, 150, 300]
        for step, value in expected.items():
            assert logged[step] == pytest.approx(value, rel=1e-5)  # the CSV keeps 6 digits
        assert [e.step for e in events.Scalars("loss/critic")] == [100, 200, 300]


def wandb_records(path: Path) -> list:
    """The records of an offline W&B run file: LevelDB's log format (32 KiB blocks of
    chunks with a 7-byte header) after W&B's own 7-byte file header."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    records, pending, position, block = [], b"", 7, 32 * 1024
    while position + 7 <= len(data):
        room = block - position % block
        if room < 7:  # a block's tail too short for a header is padding
            position += room
            continue
        length, kind = struct.unpack("<HB", data[position + 4 : position + 7])
        chunk = data[position + 7 : position + 7 + length]
        position += 7 + length
        if kind == 0 and length == 0:
            continue
        pending += chunk
        if kind in (1, 4):  # a whole record, or the last chunk of one
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
            pending = b""
    return records


def test_wandb_offline_runs_hold_the_config_and_the_csv_evaluations(tracked):
    result, out, wandb_dir = tracked
    assert result.returncode == 0, result.stderr
    runs = {}
    for path in (wandb_dir / "wandb").glob("offline-run-*/run-*.wandb"):
        records = wandb_records(path)
        (run,) = [r.run for r in records if r.WhichOneof("record_type") == "run"]
        history = [
            {
                item.key or "/".join(item.nested_key): json.loads(item.value_json)
                for item in r.history.item
            }  # fmt: skip
            for r in records
            if r.WhichOneof("record_type") == "history"
        ]
        runs[run.display_name] = (run, history)
    assert sorted(runs) == list(FOLDERS)  # one run per agent, named by its folder
    for folder, (run, history) in runs.items():
        assert run.run_group == "run"  # grouped by the population's folder
        config = {item.key: json.loads(item.value_json) for item in run.config.update}
        assert config["policy"] == "SAC" and config["env"] == "Hopper-v5"
        logged = {r["_step"]: r["eval/return_mean"] for r in history if "eval/return_mean" in r}
        expected = csv_returns(out / folder)
        assert sorted(logged) == sorted(expected)
        for step, value in expected.items():
            assert logged[step] == pytest.approx(value, rel=1e-5)
        videos = [row["video/path"] for row in history if "video/path" in row]
        assert len(videos) == 2 and all(v.endswith(".mp4") for v in videos), videos


def test_video_every_writes_a_video_per_agent_at_its_steps(tracked):
    result, out, _ = tracked
    assert result.returncode == 0, result.stderr
    for folder in FOLDERS:
        videos = sorted(p.name for p in (out / folder / "videos").iterdir())
        assert videos == ["step-00000150.mp4", "step-00000300.mp4"]
        frames = video.read_frames(out / folder / "videos" / videos[-1])
        assert len(frames) > 1 and frames[0].shape == (240, 320, 3)


def test_render_one_agent_of_the_population_and_evaluate_all(tracked, tmp_path):
    result, out, _ = tracked
    assert result.returncode == 0, result.stderr
    agent = out / "SAC-seed1"
    # --max_steps 5: 6 frames (the first state and 5 steps; Hopper does not fall so soon).
    rendered = run_module(
        "jax_rl.watch.render", str(out), "--agent", "1", "--max_steps", "5", "--out",
        str(tmp_path / "hopper.mp4"), "--width", "64", "--height", "48",
    )  # fmt: skip
    assert rendered.returncode == 0, rendered.stderr
    assert rendered.stdout.startswith("SAC-seed1 (final agent")
    assert_video(tmp_path / "hopper.mp4", 6)
    evaluated = run_module("jax_rl.watch.evaluate", str(out), "--episodes", "2")
    assert evaluated.returncode == 0, evaluated.stderr
    assert len(evaluated.stdout.splitlines()) == 2
    for folder in FOLDERS:
        assert json.loads((out / folder / "evaluation.json").read_text())["agent"] == folder
    render_and_evaluate(agent, tmp_path / "agent.mp4", 12, "--max_steps", "5")


# --- Bad flags: one line, exit 2, before anything compiles ---------------------------------


def test_an_unknown_logger_exits_2_with_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        gym_main(["--logger", "csv,mlflow", "--save_dir", str(tmp_path / "never")])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown logger 'mlflow'" in err, err
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize("tracker", ["tensorboard", "wandb"])
def test_a_tracker_not_installed_exits_2_naming_the_install_command(
    tracker, tmp_path, capsys, monkeypatch
):
    monkeypatch.setitem(trackers.REQUIREMENTS, tracker, ("no_such_module_jax_rl", "pip x"))
    with pytest.raises(SystemExit) as e:
        dm_control_main(["--logger", tracker, "--save_dir", str(tmp_path / "never")])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"--logger {tracker} needs the no_such_module_jax_rl package" in err and "pip x" in err
    assert not (tmp_path / "never").exists()


def test_the_install_commands_name_the_extras():
    assert trackers.REQUIREMENTS["wandb"][1] == "pip install 'jax_rl[wandb]'"
    assert trackers.REQUIREMENTS["tensorboard"][1] == "pip install 'jax_rl[tensorboard]'"


def test_a_negative_video_every_exits_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        dm_control_main(["--video_every", "-5", "--save_dir", str(tmp_path / "never")])
    assert e.value.code == 2
    assert "--video_every must be a number of steps >= 0" in capsys.readouterr().err


def test_loggers_parse_with_csv_always_first():
    assert trackers.parse_loggers("tensorboard") == ("csv", "tensorboard")
    assert trackers.parse_loggers("wandb,csv,wandb") == ("csv", "wandb")
    with pytest.raises(Exception, match="unknown logger"):
        trackers.parse_loggers(",")
    assert cli.EXIT_USAGE == 2
