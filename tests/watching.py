"""What the tests of jax_rl.watch.render and jax_rl.watch.evaluate on each backend's tiny run share.

Each backend's run is the one its entry-point tests already train (tests/test_cli.py,
tests/test_gym_entry.py's flags in tests/test_trackers.py, tests/envs/test_playground.py);
these helpers render and evaluate it as a user would, in a subprocess.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from jax_rl.io import video

ROOT = Path(__file__).resolve().parent.parent
SIZE = ("--width", "64", "--height", "48")  # tiny frames: drawing is most of the time


def run_module(module: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m module args...` from the project root."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


def assert_video(path: Path, frames: int) -> list[np.ndarray]:
    """The video holds `frames` frames of 64 x 48 that are not all equal; its frames."""
    read = video.read_frames(path)
    assert len(read) == frames, (path, len(read))
    assert read[0].shape == (48, 64, 3)
    assert any(not np.array_equal(read[0], f) for f in read[1:]), "every frame is the same"
    return read


def render_and_evaluate(run_dir: Path, out: Path, frames: int, *extra: str) -> dict:
    """Render 2 episodes of the run's agent into `out` (which must hold `frames` frames),
    then evaluate it on 2 episodes; returns evaluation.json. Both load programs from the
    session's compilation cache (tests/conftest.py): a device backend's evaluation loads
    the render's."""
    rendered = run_module(
        "jax_rl.watch.render", str(run_dir), "--episodes", "2", "--out", str(out), *SIZE, *extra
    )
    assert rendered.returncode == 0, rendered.stderr
    assert f"{frames} frames of 64x48 in {out}" in rendered.stdout, rendered.stdout
    assert_video(out, frames)
    evaluated = run_module("jax_rl.watch.evaluate", str(run_dir), "--episodes", "2")
    assert evaluated.returncode == 0, evaluated.stderr
    result = json.loads((run_dir / "evaluation.json").read_text())
    assert len(result["returns"]) == 2 and result["episodes"] == 2
    assert result["return_min"] <= result["return_mean"] <= result["return_max"]
    assert f"return {result['return_mean']:.1f} +- {result['return_std']:.1f}" in (evaluated.stdout)
    # Fresh seeds: never the agent's seed or its evaluation environment's.
    config = json.loads((run_dir / "config.json").read_text())
    seed = config.get("seed", config["loop"]["seed"])
    assert result["seed"] not in (seed, seed + 1, seed + 10_000)
    return result
