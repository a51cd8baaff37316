"""The entry points, run as users run them: as scripts, in a subprocess."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "jax_rl" / "main_dm_control.py"
BRAX_SCRIPT = ROOT / "jax_rl" / "main_brax.py"


def run(*args: str, cwd: Path = ROOT, script: Path = SCRIPT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(script), *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )


@pytest.mark.parametrize("policy", ["TD3", "SAC", "MPO"])
def test_dm_control_entry_point_runs_end_to_end(policy, tmp_path):
    out = tmp_path / "run"
    result = run(
        "--policy",
        policy,
        "--max_timesteps",
        "300",
        "--start_timesteps",
        "100",
        "--batch_size",
        "32",
        "--hidden_sizes",
        "32,32",
        "--eval_freq",
        "150",
        "--eval_episodes",
        "1",
        "--log_freq",
        "100",
        "--save_dir",
        str(out),
        "--no_progress",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "final eval return" in result.stdout
    with (out / "evaluations.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [int(r["step"]) for r in rows] == [0, 150, 300]
    assert all(0 <= float(r["return_mean"]) <= 1000 for r in rows)
    with (out / "train.csv").open() as f:
        train_rows = list(csv.DictReader(f))
    assert [int(r["step"]) for r in train_rows] == [100, 200, 300]
    assert (out / "config.json").exists() and (out / "agent.msgpack").stat().st_size > 0


@pytest.mark.parametrize(
    "args, message",
    [
        (["--policy", "PPO"], "invalid choice: 'PPO'"),
        (["--policy", "MPO", "--dual_solver", "bfgs"], "dual_solver must be one of"),
        (["--policy", "TD3", "--epsilon", "0.2"], "--epsilon does not apply to --policy TD3"),
        (["--domain_name", "cartpol"], "valid domains:"),
        (["--task_name", "swing"], "valid tasks:"),
        (["--batch_size", "0"], "batch_size must be a positive integer"),
        (["--max_timesteps", "-5"], "max_timesteps must be a positive integer"),
        (["--actor_lr", "-1"], "actor_lr must be > 0"),
        (["--tau", "2"], r"tau must be in [0, 1]"),
        (
            ["--policy", "SAC", "--policy_noise", "0.3"],
            "--policy_noise does not apply to --policy SAC",
        ),
        (["--start_timesteps", "10"], "must be at least batch_size"),
        (["--hidden_sizes", "256,x"], "expected comma-separated integers"),
        (["--seed", "abc"], "invalid int value"),
        (["--replay_size", "100000000000"], "ask for a smaller replay capacity"),
    ],
)
def test_bad_input_exits_2_with_one_clear_line(args, message, tmp_path):
    result = run(*args, "--save_dir", str(tmp_path / "never"))
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize("policy", ["TD3", "SAC", "MPO"])
def test_brax_entry_point_runs_end_to_end(policy, tmp_path):
    out = tmp_path / "run"
    result = run(
        "--policy",
        policy,
        "--env",
        "inverted_pendulum",
        "--max_timesteps",
        "512",
        "--num_envs",
        "8",
        "--updates_per_step",
        "2",
        "--start_timesteps",
        "128",
        "--batch_size",
        "32",
        "--hidden_sizes",
        "16",
        "--eval_freq",
        "256",
        "--eval_episodes",
        "2",
        "--log_freq",
        "128",
        "--episode_length",
        "20",
        "--save_dir",
        str(out),
        "--no_progress",
        cwd=tmp_path,
        script=BRAX_SCRIPT,
    )
    assert result.returncode == 0, result.stderr
    assert "uniform random policy" in result.stdout
    with (out / "evaluations.csv").open() as f:
        assert [int(r["step"]) for r in csv.DictReader(f)] == [0, 256, 512]
    with (out / "train.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [int(r["step"]) for r in rows] == [128, 256, 384, 512]
    # Updates start at 128 transitions: 49 iterations x 2 updates.
    assert int(rows[-1]["updates"]) == 98
    summary = json.loads((out / "summary.json").read_text())
    assert summary["env_steps"] == 512 and summary["updates"] == 98


@pytest.mark.parametrize(
    "args, message",
    [
        (["--env", "halfcheeta"], "valid environments:"),
        (["--backend", "warp"], "valid backends:"),
        (["--num_envs", "0"], "num_envs must be a positive integer"),
        (["--start_timesteps", "100", "--batch_size", "256"], "must be at least batch_size"),
        (["--replay_size", "100000000000"], "ask for a smaller replay capacity"),
        (["--policy", "MPO", "--num_samples", "0"], "num_samples must be a positive integer"),
    ],
)
def test_brax_bad_input_exits_2_with_one_clear_line(args, message, tmp_path):
    result = run(*args, "--save_dir", str(tmp_path / "never"), script=BRAX_SCRIPT)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "never").exists()
