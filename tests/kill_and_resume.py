"""What the entry points' kill-and-resume tests share (dm_control, Brax, Gymnasium, Playground)."""

import csv
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_entry(script: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """jax_rl/`script` (an entry point) with `args`, from the repository root, its output
    captured; `env` over this process's environment."""
    return subprocess.run(
        [sys.executable, str(ROOT / "jax_rl" / script), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


def evaluations(folder: Path) -> list[tuple[str, str, str]]:
    """A run's evaluations.csv rows as (step, return_mean, return_std) text."""
    with (folder / "evaluations.csv").open() as f:
        return [(r["step"], r["return_mean"], r["return_std"]) for r in csv.DictReader(f)]


def assert_resumes_bitwise(
    run: Callable[..., subprocess.CompletedProcess],
    args: tuple[str, ...],
    out: Path,
    step: int,
    reference: Path,
) -> None:
    """`run(*args, "--save_dir", out)` killed by SIGKILL straight after its checkpoint at
    `step` (no handler runs), then continued with `--resume out`, ends as the
    uninterrupted run in `reference`: the same final parameters, the same evaluations."""
    killed = run(*args, "--save_dir", str(out), env={"JAX_RL_KILL_AT_STEP": str(step)})
    assert killed.returncode == -9, killed.stderr
    assert not (out / "agent.msgpack").exists()
    resumed = run(*args, "--resume", str(out))
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed from the checkpoint at step {step}" in resumed.stderr
    assert (out / "agent.msgpack").read_bytes() == (reference / "agent.msgpack").read_bytes()
    assert evaluations(out) == evaluations(reference)
