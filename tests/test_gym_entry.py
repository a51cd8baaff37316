"""jax_rl/main_gym.py, run as users run it: as a script, in a subprocess."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kill_and_resume import assert_resumes_bitwise, evaluations

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "jax_rl" / "main_gym.py"
# Hopper: random actions topple it within tens of steps, so episodes end (and the
# environments reset) many times, also across the checkpoint.
FLAGS = (
    "--env", "Hopper-v5", "--max_timesteps", "300", "--start_timesteps", "100",
    "--batch_size", "32", "--hidden_sizes", "32,32", "--eval_freq", "150",
    "--eval_episodes", "2", "--log_freq", "100", "--no_progress",
)  # fmt: skip
# TD3 runs as a population of two seeds: end to end and a population in one run.
EXTRA = {"TD3": ("--num_seeds", "2"), "SAC": (), "MPO": ()}


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture(scope="module")
def gym_runs(tmp_path_factory):
    """policy -> (completed process, save_dir) of one short uninterrupted run each."""
    runs: dict = {}

    def get(policy: str):
        if policy not in runs:
            out = tmp_path_factory.mktemp(f"gym-{policy}") / "run"
            result = run(*FLAGS, *EXTRA[policy], "--policy", policy, "--save_dir", str(out))
            runs[policy] = (result, out)
        return runs[policy]

    return get


@pytest.mark.parametrize("policy", ["TD3", "SAC", "MPO"])
def test_gym_entry_point_runs_end_to_end(policy, gym_runs):
    result, out = gym_runs(policy)
    assert result.returncode == 0, result.stderr
    first_line = result.stderr.splitlines()[0]
    assert first_line.startswith("jax_rl: ") and "on gymnasium Hopper-v5" in first_line
    assert "Traceback" not in result.stderr and "WARN" not in result.stderr, result.stderr
    folders = [out / f"{policy}-seed{seed}" for seed in (0, 1)] if policy == "TD3" else [out]
    for folder in folders:
        assert [step for step, *_ in evaluations(folder)] == ["0", "150", "300"]
        with (folder / "train.csv").open() as f:
            assert [int(r["step"]) for r in csv.DictReader(f)] == [100, 200, 300]
        assert (folder / "agent.msgpack").stat().st_size > 0
        config = json.loads((folder / "config.json").read_text())
        assert config["env_backend"] == "gymnasium" and config["env"] == "Hopper-v5"
    if policy == "TD3":
        assert "2 agents, 300 environment steps each" in result.stdout
        summary = json.loads((out / "summary.json").read_text())
        assert [a["seed"] for a in summary["agents"]] == [0, 1]
        assert (out / "ranking.md").exists()
        assert evaluations(folders[0]) != evaluations(folders[1])
    else:
        assert "final eval return" in result.stdout


def test_run_killed_by_sigkill_and_resumed_ends_as_the_uninterrupted_one(gym_runs, tmp_path):
    reference_result, reference = gym_runs("SAC")
    assert reference_result.returncode == 0, reference_result.stderr
    args = (*FLAGS, "--policy", "SAC", "--checkpoint_every", "100")
    assert_resumes_bitwise(run, args, tmp_path / "run", 200, reference)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--env", "Hoper-v5"], "installed MuJoCo environments: Ant-v4, Ant-v5, HalfCheetah-v4"),
        (["--env", "CartPole-v1"], "CartPole-v1 has Discrete actions"),
    ],
)
def test_gym_bad_input_exits_2_with_one_clear_line(args, message, tmp_path):
    result = run(*args, "--save_dir", str(tmp_path / "never"))
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert not (tmp_path / "never").exists()
