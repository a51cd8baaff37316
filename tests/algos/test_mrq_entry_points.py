"""`--preset mrq` through both host loops' entry points, as users run them: in a subprocess,
killed by SIGKILL straight after a checkpoint and resumed, ending bit for bit as the run
that was never stopped (issue 96's kill-and-resume test on both loops; dm_control trains a
population of two).

MR.Q's widths (512-wide encoders, value 512-512-512) are cut to 16 by flags, which win
over the preset; everything else is the preset's: representation, LAP, the 5-step latent
model, 3-step values, hard copies every 250 updates (none fall in 300 steps, so the 20
below force copies inside the run), and on dm_control its action repeat 2.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from kill_and_resume import assert_resumes_bitwise, evaluations

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = {
    "dm_control": ROOT / "jax_rl" / "main_dm_control.py",
    "gymnasium": ROOT / "jax_rl" / "main_gym.py",
}
TINY = (
    "--preset", "mrq", "--encoder_hidden_sizes", "16", "--embedding_size", "16",
    "--action_embedding_size", "8", "--actor_hidden_sizes", "16",
    "--critic_hidden_sizes", "16", "--num_bins", "5",
    "--target_every", "20", "--encoder_every", "20",
)  # fmt: skip
LOOP = (
    "--max_timesteps", "300", "--start_timesteps", "100", "--batch_size", "16",
    "--eval_freq", "150", "--eval_episodes", "1", "--log_freq", "100", "--no_progress",
    "--checkpoint_every", "100",
)  # fmt: skip
# Hopper falls within tens of random steps: episodes end, and windows are cut, across the
# checkpoint.
TASK = {
    "dm_control": ("--domain_name", "cartpole", "--task_name", "swingup", "--num_seeds", "2"),
    "gymnasium": ("--env", "Hopper-v5"),
}


def run(loop: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPTS[loop]), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize("loop", list(SCRIPTS))
def test_mrq_killed_by_sigkill_and_resumed_ends_as_the_uninterrupted_run(loop, tmp_path):
    args = ("--policy", "TD3", *TASK[loop], *TINY, *LOOP)
    reference = tmp_path / "whole"
    whole = run(loop, *args, "--save_dir", str(reference))
    assert whole.returncode == 0, whole.stderr
    first = whole.stderr.splitlines()[0]
    assert "preset mrq/" in first and "representation" not in first.split("your flags")[-1]
    if loop == "dm_control":
        # Two agents, each its own folder; the checks below read the population's agents.
        agents = [f"TD3-seed{s}" for s in (0, 1)]
        assert all((reference / a / "agent.msgpack").exists() for a in agents)
        assert evaluations(reference / agents[0]) != evaluations(reference / agents[1])

        def resumed_matches(out: Path) -> None:
            for a in agents:
                got, want = out / a, reference / a
                assert (got / "agent.msgpack").read_bytes() == (want / "agent.msgpack").read_bytes()
                assert evaluations(got) == evaluations(want)

        killed = run(loop, *args, "--save_dir", str(tmp_path / "cut"),
                     env={"JAX_RL_KILL_AT_STEP": "200"})  # fmt: skip
        assert killed.returncode == -9, killed.stderr
        resumed = run(loop, *args, "--resume", str(tmp_path / "cut"))
        assert resumed.returncode == 0, resumed.stderr
        assert "resumed from the checkpoint at step 200" in resumed.stderr
        resumed_matches(tmp_path / "cut")
    else:
        assert_resumes_bitwise(
            lambda *a, env=None: run(loop, *a, env=env), args, tmp_path / "cut", 200, reference
        )
