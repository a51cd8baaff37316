"""The entry points, run as users run them: as scripts, in a subprocess."""

import csv
import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kill_and_resume import assert_resumes_bitwise
from watching import render_and_evaluate

from jax_rl import main_brax, main_dm_control

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "jax_rl" / "main_dm_control.py"
BRAX_SCRIPT = ROOT / "jax_rl" / "main_brax.py"


POLICIES = ["TD3", "SAC", "MPO"]
# The runs of a kill-and-resume test compile the same programs three times; the session's
# persistent compilation cache (conftest.py) lets the later processes load them instead.


def run(
    *args: str, cwd: Path = ROOT, script: Path = SCRIPT, env: dict | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(script), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


DM_FLAGS = (
    "--max_timesteps", "300", "--start_timesteps", "100", "--batch_size", "32",
    "--hidden_sizes", "32,32", "--eval_freq", "150", "--eval_episodes", "1",
    "--log_freq", "100", "--no_progress",
)  # fmt: skip


@pytest.fixture(scope="module")
def dm_runs(tmp_path_factory):
    """policy -> (completed process, save_dir) of one short uninterrupted run each."""
    runs: dict = {}

    def get(policy: str):
        if policy not in runs:
            out = tmp_path_factory.mktemp(f"dm-{policy}") / "run"
            result = run(*DM_FLAGS, "--policy", policy, "--save_dir", str(out), cwd=out.parent)
            runs[policy] = (result, out)
        return runs[policy]

    return get


@pytest.mark.parametrize("policy", POLICIES)
def test_dm_control_entry_point_runs_end_to_end(policy, dm_runs):
    result, out = dm_runs(policy)
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
    # The task's preset (jax_rl/presets/), recorded in config.json and named on start-up.
    config = json.loads((out / "config.json").read_text())
    # Every learner takes its backend's one entry (TD3's own entry for cartpole-swingup, the
    # `explore` recipe, is --preset tuned's).
    entry = "dm_control/*"
    assert (config["preset"] or {}).get("name") == entry
    assert config["flags"]["hidden_sizes"] == [32, 32] and config["flags"]["eval_freq"] == 150
    assert "policy" not in config["flags"] and "save_dir" not in config["flags"]
    assert "-> your flags (--batch_size 32, --eval_episodes 1" in result.stderr
    if policy in ("TD3", "SAC"):  # CrossQ with the default 256-256 widths: ours are 32-32
        assert config["algo"]["crossq"] and config["algo"]["policy_freq"] == 3
        assert f"preset {entry} (crossq=True, policy_freq=3, adam_beta1=0.5" in result.stderr
    if policy in ("TD3", "SAC"):  # the tasks the entry was chosen on (tuned / held out)
        assert config["preset"]["tuned_on"] == ["cheetah-run", "walker-walk", "finger-spin"]
        assert config["loop"]["action_repeat"] == 1 and config["loop"]["n_step"] == 1
    if policy == "MPO":
        assert config["loop"]["n_step"] == 5 and config["algo"]["input_layer"] == "layernorm"


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
        (["--seed", "-1"], "seed must be an integer in [0, 2147483648)"),
        (["--replay_size", "100000000000"], "ask for a smaller replay capacity"),
        (["--num_seeds", "0"], "num_seeds must be a positive integer"),
        (["--preset", "paper", "--tau", "0.1,1.5"], r"tau must be in [0, 1]"),
        # CrossQ (TD3's and SAC's dm_control entry) has no target networks: a tau would do
        # nothing, and a sweep of it would train one agent under several names.
        (
            ["--policy", "SAC", "--tau", "0.005,0.01"],
            "SAC tau does nothing with crossq (no target networks): leave it at 0.005, got 0.01 "
            "(crossq=True: from preset dm_control/*",
        ),
        (["--preset", "paper", "--crossq", "--target_every", "250"], "target_every does nothing"),
        # Non-finite values, for each kind of float flag: a rate, a sweep, a loop setting.
        (["--actor_lr", "inf"], "--actor_lr: expected finite numbers, got 'inf'"),
        (["--tau", "0.005,nan"], "--tau: expected finite numbers"),
        (["--policy", "MPO", "--epsilon_std=-inf"], "--epsilon_std: expected finite numbers"),
        (["--noise_color", "nan"], "--noise_color: expected a finite number, got 'nan'"),
        (["--preset", "bogus"], "unknown preset 'bogus' for TD3; choose from auto, paper"),
        (["--policy", "SAC", "--preset", "dm_control/walker-walk"], "unknown preset"),
        # The accelerator-scale recipe (docs/accelerator.md).
        (["--critic", "categorical", "--num_atoms", "1"], "num_atoms must be an integer >= 2"),
        (["--v_min", "5", "--v_max", "5"], "v_min must be below v_max"),
        (["--v_min", "nan"], "--v_min: expected finite numbers"),
        (["--critic_hidden_sizes", "256,0"], "critic_hidden_sizes must be positive integers"),
        (["--policy", "MPO", "--critic", "categorical"], "--critic does not apply to --policy MPO"),
        (["--normalize_obs", "maybe"], "expected true or false, got 'maybe'"),
        (["--matmul_dtype", "fp16"], "matmul_dtype must be one of float32, bf16"),
        (["--exploration_noise_min", "0.1"], "the host loop explores with --exploration_noise"),
        # Network families and CrossQ (jax_rl/networks.py).
        (
            ["--critic_network", "simba", "--critic_blocks", "0"],
            "critic_blocks must be an integer >= 1",
        ),
        (["--policy", "MPO", "--actor_blocks", "-1"], "actor_blocks must be an integer >= 1"),
        (["--critic_network", "resnet"], "critic_network must be one of mlp, simba, simbav2"),
        (
            ["--policy", "MPO", "--actor_network", "simbav2", "--hidden_sizes", "64,32"],
            "actor_network simbav2 takes one width",
        ),
        (["--crossq", "--actor_network", "simbav2"], "crossq trains batchrenorm networks"),
        (["--policy", "SAC", "--scale_rewards", "sometimes"], "expected true or false"),
        (
            ["--critic_network", "simba", "--critic_hidden_sizes", "0"],
            "critic_hidden_sizes must be positive integers",
        ),
        (
            ["--critic_network", "simba", "--critic_hidden_sizes", "256,128"],
            "simba takes one width",
        ),
        (["--policy", "MPO", "--crossq"], "--crossq does not apply to --policy MPO"),
        (
            ["--policy", "SAC", "--crossq", "--renorm_momentum", "1"],
            "renorm_momentum must be in (0, 1)",
        ),
        (["--crossq", "--renorm_momentum", "0"], "renorm_momentum must be in (0, 1)"),
        (["--crossq", "--critic_network", "simba"], "crossq trains batchrenorm networks"),
        (["--crossq", "--critic", "categorical"], "crossq takes the scalar critic"),
        (
            ["--preset", "paper", "--critic_network", "batchrenorm"],
            "critic_network batchrenorm trains with the crossq critic recipe",
        ),
        (
            ["--policy", "MPO", "--actor_network", "batchrenorm"],
            "actor_network batchrenorm trains with the crossq critic recipe",
        ),
        (["--adam_beta1", "1"], "adam_beta1 must be in [0, 1)"),
        (["--policy", "SAC", "--policy_freq", "0"], "policy_freq must be a positive integer"),
        # TD7's parts: SALE, LAP, target copies, value clipping (jax_rl/algos/sale.py).
        (["--replay", "lap", "--lap_alpha", "1.5"], "lap_alpha must be in (0, 1], got 1.5"),
        (["--policy", "SAC", "--replay", "lap", "--lap_alpha", "0"], "lap_alpha must be in (0, 1]"),
        (["--replay", "per"], "replay must be one of uniform, lap"),
        (
            ["--policy", "SAC", "--preset", "paper", "--replay", "lap", "--critic", "categorical"],
            "lap takes the scalar",
        ),
        (
            ["--representation", "sale", "--embedding_size", "0"],
            "embedding_size must be a positive",
        ),
        (["--representation", "vae"], "representation must be one of none, sale"),
        (
            ["--policy", "MPO", "--representation", "sale"],
            "--representation does not apply to --policy MPO",
        ),
        (["--policy", "MPO", "--preset", "td7"], "unknown preset 'td7' for MPO"),
        (
            ["--representation", "sale", "--crossq", "--target_every", "250"],
            "target_every does nothing with crossq (no target networks)",
        ),
        (["--encoder_every", "0"], "encoder_every must be a positive integer"),
        (["--target_every", "-1"], "target_every must be an integer >= 0"),
        (["--clip_values", "--crossq"], "clip_values takes the scalar critic with target networks"),
    ],
)
def test_bad_input_exits_2_with_one_clear_line(args, message, tmp_path, capsys):
    # In this process (a subprocess costs 2 s of imports a case): the entry point's `main`,
    # as the script calls it. The subprocess test below shows the same line from the script.
    err = refused(main_dm_control.main, args, tmp_path, capsys)
    assert message in err
    assert err.count("\n") == 1, err  # one line, nothing before it


@pytest.mark.parametrize(
    "args, trained",
    [
        (
            ["--policy", "TD3", "--critic_network", "simba", "--actor_network", "simba"],
            {"critic_network": "simba", "actor_network": "simba", "critic": "scalar"},
        ),
        (
            ["--policy", "TD3", "--critic", "categorical", "--normalize_obs"],
            {"critic": "categorical", "normalize_obs": True},
        ),
        (
            ["--policy", "SAC", "--representation", "sale", "--replay", "lap"],
            {"representation": "sale", "replay": "lap", "critic": "scalar"},
        ),
    ],
)
def test_a_critic_or_network_the_user_names_replaces_the_entry_s_crossq(
    args, trained, tmp_path, capsys
):
    """On dm_control, whose entry turns CrossQ on, a critic, network or representation the
    user names trains as named: the entry's crossq gives way (the start-up line and
    config.json say so) and its other settings stay."""
    out = tmp_path / "run"
    assert main_dm_control.main([*args, *DM_FLAGS, "--save_dir", str(out)]) == 0
    config = json.loads((out / "config.json").read_text())
    assert {key: config["algo"][key] for key in trained} == trained
    assert config["algo"]["crossq"] is False
    assert config["preset"]["gave_way"] == ["crossq"]
    assert "crossq" not in config["preset"]["applied"]
    assert config["preset"]["applied"]["policy_freq"] == 3  # the entry's other settings stay
    assert "(gave way to your flags: crossq)" in capsys.readouterr().err


def test_naming_crossq_s_own_network_family_keeps_the_entry_s_crossq(tmp_path):
    """BatchRenorm is the family the entry's crossq builds: naming it displaces nothing."""
    out = tmp_path / "run"
    args = ["--policy", "SAC", "--critic_network", "batchrenorm", *DM_FLAGS]
    assert main_dm_control.main([*args, "--save_dir", str(out)]) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["algo"]["crossq"] is True
    assert config["algo"]["critic_network"] == "batchrenorm"
    assert "gave_way" not in config["preset"]
    assert config["preset"]["applied"]["crossq"] is True


def refused(main, args: list[str], tmp_path: Path, capsys) -> str:
    """`main(args)` exits 2 before creating its --save_dir: what it wrote on stderr."""
    never = tmp_path / "never"
    with pytest.raises(SystemExit) as exited:
        main([*args, "--save_dir", str(never)])
    assert exited.value.code == 2
    assert not never.exists()
    return capsys.readouterr().err


# An argparse refusal, a learner's own check, and an environment's: as users see them, from
# a fresh process, where import noise would also show.
@pytest.mark.parametrize(
    "args, message",
    [
        (["--policy", "PPO"], "invalid choice: 'PPO'"),
        (["--tau", "2"], r"tau must be in [0, 1]"),
        (["--domain_name", "cartpol"], "valid domains:"),
    ],
)
def test_the_script_prints_one_line_for_bad_input(args, message, tmp_path):
    result = run(*args, "--save_dir", str(tmp_path / "never"))
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr  # one line, nothing before it
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize(
    "save_dir, message",
    [
        ("/proc/jax_rl-never/run", "cannot write in /proc"),  # read-only even for root
        (str(ROOT / "README.md" / "run"), "README.md is a file, not a folder"),
    ],
)
def test_unwritable_save_dir_exits_2_before_compiling(save_dir, message):
    for flag in ("--save_dir", "--resume"):
        result = run("--max_timesteps", "300", flag, save_dir)
        assert result.returncode == 2, result.stderr
        assert f"error: {flag} {save_dir}: " in result.stderr and message in result.stderr
        assert result.stderr.count("\n") == 1, result.stderr


BRAX_FLAGS = (
    "--max_timesteps", "512", "--num_envs", "8",
    "--updates_per_step", "2", "--start_timesteps", "128", "--batch_size", "32",
    "--hidden_sizes", "16", "--eval_freq", "256", "--eval_episodes", "2",
    "--log_freq", "128", "--episode_length", "20", "--no_progress",
)  # fmt: skip


# SAC runs on Brax's physics (its start-up and models through the entry point); MPO on the
# JAX-native point mass, which compiles in seconds, for the tests of the pipeline itself
# (render and evaluate, kill and resume).
BRAX_ENV = {"SAC": "inverted_pendulum", "MPO": "point_mass"}


@pytest.fixture(scope="module")
def brax_runs(tmp_path_factory):
    """policy -> (completed process, save_dir) of one short uninterrupted run each, on the
    policy's environment in BRAX_ENV."""
    runs: dict = {}

    def get(policy: str):
        if policy not in runs:
            out = tmp_path_factory.mktemp(f"brax-{policy}") / "run"
            result = run(
                *BRAX_FLAGS, "--env", BRAX_ENV[policy], "--policy", policy,
                "--save_dir", str(out), cwd=out.parent,
                script=BRAX_SCRIPT,
            )  # fmt: skip
            runs[policy] = (result, out)
        return runs[policy]

    return get


# TD3 runs through this entry point in tests/test_population.py (a population).
@pytest.mark.parametrize("policy", ["SAC", "MPO"])
def test_brax_entry_point_runs_end_to_end(policy, brax_runs):
    result, out = brax_runs(policy)
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
        (["--num_seeds", "0"], "num_seeds must be a positive integer"),
        (["--n_step", "0"], "n_step must be a positive integer"),
        (["--tau", "0.1,0.1000001"], "repeat (to 6 significant digits"),
        (["--tau", "0.1,1.5"], r"tau must be in [0, 1]"),
        (["--policy_freq", "1,2"], "invalid int value"),
        (["--asymmetric_obs", "on"], "observes an array, not a dict with 'state'"),
        (["--env", "point_mass", "--backend", "mjx"], "point_mass is stepped in JAX alone"),
        (
            ["--env", "CartpoleSwingup", "--asymmetric_obs", "on"],
            "--asymmetric_obs on: Playground task CartpoleSwingup observes an array",
        ),
    ],
)
def test_brax_bad_input_exits_2_with_one_clear_line(args, message, tmp_path, capsys):
    # In this process, as above; test_start_up_shows_no_third_party_noise runs the script.
    err = refused(main_brax.main, args, tmp_path, capsys)
    assert message in err
    assert err.count("\n") == 1, err


# --- Watching a trained run: jax_rl.watch.render and jax_rl.watch.evaluate (docs/watching.md)


def test_render_and_evaluate_a_dm_control_run(dm_runs, tmp_path):
    """Two episodes cut at 20 steps: 21 frames each (the first state included)."""
    result, out = dm_runs("SAC")
    assert result.returncode == 0, result.stderr
    evaluation = render_and_evaluate(out, tmp_path / "sac.mp4", 42, "--max_steps", "20")
    assert all(0 <= r <= 1000 for r in evaluation["returns"])


def test_render_and_evaluate_a_device_run(brax_runs, tmp_path):
    """Episodes of the run's 20-step time limit: 20 frames each (the state an episode ends
    in is reset in the same step); the evaluation loads the render's compiled rollout.
    (The point mass's run; Brax's models are drawn in tests/envs/test_brax.py.)"""
    result, out = brax_runs("MPO")
    assert result.returncode == 0, result.stderr
    evaluation = render_and_evaluate(out, tmp_path / "point_mass.mp4", 40)
    assert all(-20 * 4 <= r <= 0 for r in evaluation["returns"])  # -x^2, |x| <= 2


# What third-party packages print on import or while building Brax's models (jax_rl.io.quiet).
THIRD_PARTY_NOISE = ("Failed to import warp", "Failed to import mujoco_warp", "settotalmass",
                     "Brax System, piplines")  # fmt: skip


def test_start_up_shows_no_third_party_noise(brax_runs):
    # A bad name: Brax and MJX are imported to list the valid names, nothing compiles.
    result = run("--env", "halfcheeta", script=BRAX_SCRIPT)
    assert result.returncode == 2
    assert result.stdout == "" and result.stderr.startswith("error: unknown Brax environment")
    # Halfcheetah's XML uses settotalmass and Brax warns as it builds the model: the
    # environment is opened, then the replay check refuses (exit 2) before anything compiles.
    result = run("--env", "halfcheetah", "--replay_size", "100000000000", script=BRAX_SCRIPT)
    assert result.returncode == 2, result.stderr
    assert result.stdout == "" and result.stderr.count("\n") == 1, result.stderr
    assert "ask for a smaller replay capacity" in result.stderr
    # A real start (the module's Brax run): the start-up line comes first, no noise after.
    result, _ = brax_runs("SAC")
    assert result.returncode == 0, result.stderr
    first = result.stderr.splitlines()[0]
    assert first.startswith("jax_rl: brax-SAC-inverted_pendulum-seed0 on brax inverted_pendulum")
    assert "compiling" in first
    output = result.stdout + result.stderr
    assert not [noise for noise in THIRD_PARTY_NOISE if noise in output], output


# --- kill -9 and resume, through the entry points --------------------------------------------


# Every learner on the host loop; on the device pipeline, whose checkpoint is the whole
# carry whatever the learner and the environment, MPO on the point mass only.
@pytest.mark.parametrize(
    "loop, policy",
    [("dm_control", "TD3"), ("dm_control", "SAC"), ("dm_control", "MPO"), ("brax", "MPO")],
)
def test_run_killed_by_sigkill_and_resumed_ends_as_the_uninterrupted_one(
    loop, policy, dm_runs, brax_runs, tmp_path
):
    if loop == "dm_control":
        flags, script, runs, every = DM_FLAGS, SCRIPT, dm_runs, 100
    else:
        flags = (*BRAX_FLAGS, "--env", BRAX_ENV[policy])
        script, runs, every = BRAX_SCRIPT, brax_runs, 128
    reference_result, reference = runs(policy)
    assert reference_result.returncode == 0, reference_result.stderr
    args = (*flags, "--policy", policy, "--checkpoint_every", str(every))
    # Killed after the checkpoint of the second interval.
    run_script = functools.partial(run, script=script)
    assert_resumes_bitwise(run_script, args, tmp_path / "run", 2 * every, reference)


def test_non_finite_loss_exits_3_naming_the_step_and_keeps_the_checkpoint(tmp_path):
    out = tmp_path / "run"
    result = run(
        *DM_FLAGS, "--actor_lr", "1e30", "--critic_lr", "1e30", "--checkpoint_every", "50",
        "--save_dir", str(out),
    )  # fmt: skip
    assert result.returncode == 3, result.stderr
    assert "error: non-finite" in result.stderr and "at step" in result.stderr
    assert "the last good checkpoint (step" in result.stderr
    assert "Traceback" not in result.stderr


def test_resume_refusals_exit_2_with_one_clear_line(dm_runs, tmp_path):
    _, sac_run = dm_runs("SAC")  # holds its final checkpoint
    cases = [
        (
            ["--policy", "TD3", "--resume", str(sac_run)],
            "policy: checkpoint has 'SAC', this run 'TD3'",
        ),
        (["--policy", "SAC", "--batch_size", "64", "--resume", str(sac_run)], "batch_size"),
        (
            ["--policy", "SAC", "--save_dir", str(sac_run)],
            "holds the checkpoints of an earlier run",
        ),
        (["--resume", str(tmp_path / "missing")], "no such directory"),
        (["--resume", str(tmp_path)], "no complete checkpoint"),
        (["--checkpoint_every", "0"], "checkpoint_every must be a positive integer"),
        (["--save_dir", str(ROOT / "README.md")], "is a file, not a folder"),
    ]
    for args, message in cases:
        result = run(*DM_FLAGS, *args)
        assert result.returncode == 2, (args, result.stderr)
        assert message in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr, args

    corrupt = tmp_path / "corrupt"
    shutil.copytree(sac_run, corrupt)
    for path in corrupt.glob("checkpoints/*/meta/*"):
        path.write_text("{ not json")
    result = run(*DM_FLAGS, "--policy", "SAC", "--resume", str(corrupt))
    assert result.returncode == 2, result.stderr
    assert "cannot be read" in result.stderr and "Traceback" not in result.stderr


def test_sigterm_writes_a_checkpoint_and_exits_143(tmp_path):
    import signal
    import time

    out = tmp_path / "run"
    flags = [*DM_FLAGS, "--max_timesteps", "100000", "--save_dir", str(out)]
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), *flags], cwd=ROOT, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 300
        while not (out / "train.csv").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=300)
    finally:
        process.kill()
    assert process.returncode == 143, stderr
    assert "stopped by SIGTERM at step" in stderr and f"--resume {out}" in stderr
    step = int(stderr.split("SIGTERM at step ")[1].split(":")[0])
    assert 100 <= step < 100_000
    checkpoints = sorted(int(p.name) for p in (out / "checkpoints").iterdir() if p.name.isdigit())
    assert checkpoints[-1] == step


@pytest.mark.parametrize("entry", ["main_dm_control", "main_gym", "main_brax"])
def test_help_groups_the_flags_and_shows_each_default_once(entry):
    """--help: the environment, the run, and the learner's flags for the --policy given
    only (each with that learner's default); without --policy, how to see them."""
    import importlib
    import re

    from jax_rl.run import cli

    module = importlib.import_module(f"jax_rl.{entry}")
    pages = {}
    for policy in (None, "TD3", "SAC", "MPO"):
        argv = ["--help"] if policy is None else ["--policy", policy, "--help"]
        parser = module.build_parser()
        cli.focus_help(parser, argv)
        pages[policy] = parser.format_help()
    for policy, page in pages.items():
        headings = [line for line in page.splitlines() if line.endswith(":") and line[0] != " "]
        assert headings == [
            "the environment:",
            "the run: steps, evaluation, saving, resuming, engine:",
            "the learner:"
            if policy is None
            else f"the learner: {policy} (jax_rl/algos/{(policy or '').lower()}.py):",
        ], headings
        entries = re.split(r"\n  (?=-)", page)
        assert all(entry.count("(default") <= 1 for entry in entries), page
        assert "(default: None)" not in page
    assert "--policy SAC --help" in pages[None] and "--critic_lr" not in pages[None]
    assert "--dual_solver" in pages["MPO"] and "--dual_solver" not in pages["SAC"]
    assert "--alpha_lr" in pages["SAC"] and "--policy_noise" not in pages["SAC"]
    assert "target entropy per action dimension" in pages["SAC"]
    assert re.search(r"--layer_init.*\n.*\n?.*\(default: lecun\)", pages["SAC"])
    assert re.search(r"--layer_init.*\n.*\n?.*\(default: pytorch\)", pages["TD3"])
    # About a screen per page: the 263-line page before commit f16084d is gone (SAC's has
    # grown since by the 7 flags of TD7's SALE and LAP, the 3 of TQC's quantile critic and
    # the temperature floor, by MR.Q's representation fields, by DR.Q's five options and by
    # the reward share's two, 262 lines).
    assert len(pages[None].splitlines()) < 100 and len(pages["SAC"].splitlines()) < 265


@pytest.mark.parametrize("tool", ["tools.results", "watch.render", "watch.evaluate"])
def test_the_tools_help_shows_each_default_once(tool, capsys):
    """The results, render and evaluate commands' --help: a default at most once per flag,
    none for a flag that has none, the ones that exist shown."""
    import importlib
    import re

    module = importlib.import_module(f"jax_rl.{tool}")
    with pytest.raises(SystemExit) as exited:
        (module.parse_args if tool == "tools.results" else module.main)(["--help"])
    assert exited.value.code == 0
    page = capsys.readouterr().out
    entries = re.split(r"\n  (?=-)", page)
    assert all(entry.count("(default") <= 1 for entry in entries), page
    assert "(default: None)" not in page and "(default: )" not in page
    assert "(default: False)" not in page
    shown = {"tools.results": "(default: 5000)", "watch.render": "(default: 320)"}
    shown["watch.evaluate"] = "(default: 10)"
    assert shown[tool] in page


def test_a_run_begun_under_a_task_entry_resumes_under_preset_tuned_and_is_told_so(tmp_path, capsys):
    """Task entries left the defaults for `--preset tuned` (issue 97). A run begun under
    one (its config.json names `dm_control/cartpole-swingup`) resumes with `--preset tuned`,
    which resolves to the same settings; with the defaults its settings differ, and the
    refusal says where the entry went."""
    out = tmp_path / "run"
    args = ["--policy", "TD3", "--domain_name", "cartpole", "--task_name", "swingup", *DM_FLAGS]
    assert main_dm_control.main([*args, "--preset", "tuned", "--save_dir", str(out)]) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["preset"]["name"] == "tuned/dm_control/cartpole-swingup"
    config["preset"]["name"] = "dm_control/cartpole-swingup"  # as it was recorded before
    (out / "config.json").write_text(json.dumps(config))
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        main_dm_control.main([*args, "--resume", str(out)])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1
    assert err.startswith("error: cannot resume: the run was started with other settings (")
    assert err.rstrip().endswith(
        "; it ran the task entry dm_control/cartpole-swingup, which is --preset tuned now: "
        "resume with --preset tuned"
    )
    assert main_dm_control.main([*args, "--preset", "tuned", "--resume", str(out)]) == 0
