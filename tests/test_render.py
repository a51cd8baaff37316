"""jax_rl.io.video and jax_rl.watch.render: video files, and the one-line refusals of bad inputs.

Rendering each backend's trained run is tested beside the run's own tests (tests/test_cli.py
for dm_control and Brax, tests/test_trackers.py for Gymnasium and a population,
tests/envs/test_playground.py), which train it once for all; see tests/watching.py.
"""

import json
from pathlib import Path

import numpy as np
import pytest
from watching import run_module

from jax_rl.io import video
from jax_rl.watch import evaluate, render


def frames_of(count: int) -> list[np.ndarray]:
    """`count` different 48 x 64 frames: a bar that moves right."""
    frames = []
    for i in range(count):
        frame = np.full((48, 64, 3), 30, np.uint8)
        frame[10:40, 2 * i : 2 * i + 6] = (200, 120, 40)
        frames.append(frame)
    return frames


@pytest.mark.parametrize("suffix", [".mp4", ".gif"])
def test_a_video_holds_every_frame_written(suffix, tmp_path):
    path = tmp_path / f"video{suffix}"
    video.write_video(path, frames_of(25), fps=30)
    read = video.read_frames(path)
    assert len(read) == 25 and read[0].shape == (48, 64, 3)
    assert not all(np.array_equal(read[0], f) for f in read[1:])
    # The bar is where it was drawn (lossy codecs: to a tolerance).
    assert abs(int(read[12][25, 26, 0]) - 200) < 40 and abs(int(read[12][25, 50, 0]) - 30) < 40


def test_a_caption_is_burned_into_the_frame():
    frame = np.zeros((48, 64, 3), np.uint8)
    captioned = video.caption(frame, "step 3  return 1.5")
    assert captioned.shape == frame.shape and captioned[:8].max() > 200
    assert not captioned[30:].any()  # only the top band changes


def fake_run(folder: Path) -> Path:
    """A run folder good enough for every check before an agent loads: config.json and
    an (empty) agent.msgpack of a one-agent dm_control run."""
    folder.mkdir()
    config = {
        "policy": "SAC",
        "env_backend": "dm_control",
        "domain_name": "cartpole",
        "task_name": "swingup",
        "loop": {"seed": 3},
        "algo": {"hidden_sizes": [8]},
    }
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "agent.msgpack").write_bytes(b"")
    return folder


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "is not a run folder (no config.json"),
        (["--checkpoint", "7"], "--checkpoint 7: no such checkpoint"),
        (["--agent", "1"], "--agent 1: "),
        (["--seed", "10003"], "--seed 10003 is one the training used"),
        (["--episodes", "0"], "--episodes must be a positive integer"),
        (["--out", "x.avi"], "must end in .mp4 or .gif"),
        (["--width", "33"], "--width must be a positive even number"),
        (["--fps", "abc"], "expected a number"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, message, tmp_path, capsys, monkeypatch):
    # render sets MUJOCO_GL for itself; the test process's is restored afterwards. Its
    # renderer check would open an OpenGL context here: test_no_renderer tests it.
    monkeypatch.setenv("MUJOCO_GL", "disable")
    monkeypatch.setattr(video, "check_renderer", lambda: None)
    run = (
        fake_run(tmp_path / "run") if message != "is not a run folder (no config.json" else tmp_path
    )
    for main in (render.main, evaluate.main):
        if main is evaluate.main and args[:1] in (["--out"], ["--width"], ["--fps"]):
            continue  # render's own flags
        with pytest.raises(SystemExit) as e:
            main([str(run), *args])
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err
        assert not (run / "render.mp4").exists() and not (run / "evaluation.json").exists()


def test_a_missing_folder_or_task_exits_2_with_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MUJOCO_GL", "disable")
    monkeypatch.setattr(video, "check_renderer", lambda: None)
    with pytest.raises(SystemExit):
        evaluate.main([str(tmp_path / "nowhere")])
    assert capsys.readouterr().err == f"error: {tmp_path / 'nowhere'}: no such folder\n"
    run = fake_run(tmp_path / "run")
    config = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({**config, "domain_name": "cartpol"}))
    with pytest.raises(SystemExit):
        render.main([str(run)])
    assert capsys.readouterr().err.startswith("error: unknown dm_control domain 'cartpol'")


def test_no_renderer_exits_2_with_one_line(tmp_path):
    """glfw without a display: no OpenGL context can start (checked before any loading)."""
    run = fake_run(tmp_path / "run")
    result = run_module(
        "jax_rl.watch.render",
        str(run),
        env={"MUJOCO_GL": "glfw", "DISPLAY": "", "WAYLAND_DISPLAY": ""},
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: no renderer could start with MUJOCO_GL=glfw")
    assert "MUJOCO_GL=egl" in result.stderr and not (run / "render.mp4").exists()
