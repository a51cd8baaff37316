"""`--preset recipe` (issue 97) killed by SIGKILL straight after a checkpoint and resumed,
on both host loops: it ends as the uninterrupted run, bit for bit. On dm_control as a
population of two, the mapped population whose U updates run in one body (CrossQ's
BatchRenorm networks on a CPU), SALE's encoders, the held temperature, the exploration
share and pink noise all carried through the checkpoint; on Gymnasium as one agent.
Sizes are shrunk by flags over the preset; nothing else is."""

import json
import subprocess

from kill_and_resume import assert_resumes_bitwise, evaluations, run_entry

SMALL = (
    "--policy", "SAC", "--preset", "recipe", "--max_timesteps", "300",
    "--start_timesteps", "100", "--batch_size", "16", "--hidden_sizes", "16,16",
    "--encoder_hidden_sizes", "16", "--embedding_size", "8", "--eval_freq", "150",
    "--eval_episodes", "1", "--log_freq", "100", "--no_progress", "--checkpoint_every", "100",
)  # fmt: skip


def dm_control(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_entry("main_dm_control.py", *args, env=env)


def gymnasium(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_entry("main_gym.py", *args, env=env)


def test_a_recipe_population_killed_and_resumed_ends_as_the_uninterrupted_one(tmp_path):
    flags = (*SMALL, "--domain_name", "cartpole", "--task_name", "swingup", "--num_seeds", "2")
    reference = tmp_path / "reference"
    result = dm_control(*flags, "--save_dir", str(reference))
    assert result.returncode == 0, result.stderr
    config = json.loads((reference / "config.json").read_text())
    assert config["preset"]["name"] == "recipe/dm_control/*"
    assert (config["loop"]["action_repeat"], config["loop"]["updates_per_step"]) == (2, 2)
    assert config["algo"]["representation"] == "sale" and config["algo"]["crossq"]
    out = tmp_path / "run"
    killed = dm_control(*flags, "--save_dir", str(out), env={"JAX_RL_KILL_AT_STEP": "200"})
    assert killed.returncode == -9, killed.stderr
    resumed = dm_control(*flags, "--resume", str(out))
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed from the checkpoint at step 200" in resumed.stderr
    for agent in ("SAC-seed0", "SAC-seed1"):
        whole, cut = reference / agent, out / agent
        assert (cut / "agent.msgpack").read_bytes() == (whole / "agent.msgpack").read_bytes()
        assert evaluations(cut) == evaluations(whole)
    # Two seeds, two learners: the agents differ (a population is not one agent twice).
    seeds = [(reference / a / "agent.msgpack").read_bytes() for a in ("SAC-seed0", "SAC-seed1")]
    assert seeds[0] != seeds[1]


def test_the_recipe_on_gymnasium_killed_and_resumed_ends_as_the_uninterrupted_one(tmp_path):
    flags = (*SMALL, "--env", "Hopper-v5")
    reference = tmp_path / "reference"
    result = gymnasium(*flags, "--save_dir", str(reference))
    assert result.returncode == 0, result.stderr
    config = json.loads((reference / "config.json").read_text())
    assert config["preset"]["name"] == "recipe/gymnasium/*"
    assert (config["loop"]["action_repeat"], config["loop"]["updates_per_step"]) == (1, 1)
    assert_resumes_bitwise(gymnasium, flags, tmp_path / "run", 200, reference)
