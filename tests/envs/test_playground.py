"""MuJoCo Playground's DM Control tasks on the device pipeline (jax_rl.envs.playground).

MJX compiles slowly on a CPU (a cartpole step ~10 s on 2 busy cores), so the
adapter tests share one environment and one jitted step, and the entry-point
runs load their programs from the session's compilation cache (tests/conftest.py: the
killed and resumed runs load the reference run's programs).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from kill_and_resume import assert_resumes_bitwise, evaluations
from watching import render_and_evaluate

from jax_rl import main_brax
from jax_rl.envs import UnknownEnvironmentError, playground

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "jax_rl" / "main_brax.py"
LIMIT = 5  # the short time limit of the adapter tests
N = 4  # environments: one shape, so that the step compiles once


@pytest.fixture(scope="module")
def short_env():
    """CartpoleBalance with a 5-step time limit, and its step jitted once."""
    env = playground.make_env("CartpoleBalance", episode_length=LIMIT)
    return env, jax.jit(env.step)


def test_time_limit_keeps_true_final_observation_and_discount_one(short_env):
    env, step = short_env
    state = env.reset(jax.random.key(0), N)
    push = jnp.full((N, env.action_size), 0.5, jnp.float32)
    for _ in range(LIMIT):
        before = state
        state, transition, info = step(state, push)
    assert bool(info.truncated.all()) and bool(info.done.all())
    np.testing.assert_array_equal(transition.discount, 1.0)
    # next_obs is the observation the step produced, not the one after the reset...
    assert not np.allclose(transition.next_obs, before.obs)
    assert not np.allclose(state.obs, transition.next_obs)
    # ...which is a fresh start: cart near the centre, pole near upright, slow.
    np.testing.assert_array_equal(state.steps, 0)
    assert np.all(np.abs(np.asarray(state.obs)[:, 0]) <= 0.1)
    assert np.all(np.asarray(state.obs)[:, 1] > 0.99)  # cos of the pole angle
    np.testing.assert_array_less(0.0, info.episode_return)


def test_diverged_simulation_is_a_true_terminal_with_finite_transition(short_env):
    """Playground ends an episode early only when the simulation diverges (NaN)."""
    env, step = short_env
    state = env.reset(jax.random.key(1), N)

    @jax.jit  # one program, not one per array shape
    def poison(physics):
        """Environment 0's MJX state with NaN in every float array."""
        arrays = tuple(
            x.at[0].set(jnp.nan) if jnp.issubdtype(x.dtype, jnp.floating) else x
            for x in physics.arrays
        )
        return physics.replace(arrays=arrays)

    state = state.replace(physics=poison(state.physics))
    state, transition, info = step(state, jnp.zeros((N, env.action_size)))
    np.testing.assert_array_equal(info.done, [True, False, False, False])
    np.testing.assert_array_equal(info.truncated, False)
    np.testing.assert_array_equal(transition.discount, [0.0, 1.0, 1.0, 1.0])
    # Stored as zeros: no NaN reaches the replay buffer or the episode return.
    assert np.isfinite(np.asarray(transition.next_obs)).all()
    np.testing.assert_array_equal(transition.next_obs[0], 0.0)
    assert np.isfinite(np.asarray(transition.reward)).all()
    assert np.isfinite(np.asarray(state.obs)).all()  # reset to a fresh state


def test_resets_draw_fresh_random_initial_states(short_env):
    env, step = short_env
    state = env.reset(jax.random.key(2), N)
    starts = [np.asarray(state.obs)]
    zero = jnp.zeros((N, env.action_size))
    for t in range(2 * LIMIT):
        state, _, _ = step(state, zero)
        if (t + 1) % LIMIT == 0:
            starts.append(np.asarray(state.obs))
    starts = np.concatenate(starts)  # 3 resets x 4 environments
    assert len({tuple(np.round(row, 6)) for row in starts}) == len(starts)


def test_observations_are_float32_and_the_state_checkpointable(short_env):
    env, _ = short_env
    state = env.reset(jax.random.key(3), N)
    assert state.obs.dtype == jnp.float32 and state.obs.shape == (N, env.obs_size)
    assert (env.obs_size, env.action_size) == (5, 1)
    # Orbax refuses arrays of size 0 (MJX has many); the state keeps none.
    assert all(x.size > 0 for x in jax.tree_util.tree_leaves(state))


def test_defaults_come_from_the_table_and_playgrounds_published_config():
    defaults = playground.task_defaults("CartpoleSwingup")
    published = playground.published_config("CartpoleSwingup")
    assert (defaults.episode_length, defaults.action_repeat) == (1000, 1)
    assert published.episode_length == 1000 and published.action_repeat == 1
    assert (defaults.num_envs, defaults.updates_per_step) == (16, 16)
    # Equal tasks are one environment to the pipeline's caches.
    assert playground.make_env("CartpoleBalance", episode_length=LIMIT) == playground.make_env(
        "CartpoleBalance", episode_length=LIMIT
    )


def test_unknown_names_list_both_registries():
    with pytest.raises(UnknownEnvironmentError) as e:
        main_brax.check_environment("CartpoleSwingUp", None)
    message = str(e.value)
    assert "Brax: ant," in message and "halfcheetah" in message
    assert "MuJoCo Playground (DM Control Suite): AcrobotSwingup," in message
    assert "CartpoleSwingup" in message and "WalkerWalk" in message
    with pytest.raises(UnknownEnvironmentError, match="valid: jax"):
        main_brax.check_environment("CartpoleSwingup", "positional")


# --- The entry point, as users run it -----------------------------------------------------

FLAGS = (
    "--env", "CartpoleBalance", "--max_timesteps", "512", "--num_envs", "8",
    "--updates_per_step", "2", "--start_timesteps", "128", "--batch_size", "32",
    "--hidden_sizes", "16", "--eval_freq", "256", "--eval_episodes", "2",
    "--log_freq", "128", "--episode_length", "20", "--no_progress",
)  # fmt: skip
# What third-party packages may print on import or while building the models (jax_rl.io.quiet).
NOISE = ("Failed to import", "settotalmass", "Warning", "WARNING", "warn(")


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture(scope="class")
def runs(tmp_path_factory):
    """policy -> (completed process, save_dir) of one short uninterrupted run each."""
    done: dict = {}
    extra = {"TD3": (), "SAC": (), "MPO": ("--dual_solver", "newton")}

    def get(policy: str):
        if policy not in done:
            out = tmp_path_factory.mktemp(f"playground-{policy}") / "run"
            result = run(*FLAGS, "--policy", policy, *extra[policy], "--save_dir", str(out))
            done[policy] = (result, out)
        return done[policy]

    return get


class TestEntryPoint:
    """Runs of main_brax.py (one xdist group of their own: they take a few minutes)."""

    @pytest.mark.parametrize("policy", ["TD3", "SAC", "MPO"])
    def test_trains_every_learner_on_a_playground_task(self, policy, runs):
        result, out = runs(policy)
        assert result.returncode == 0, result.stderr
        start = f"jax_rl: playground-{policy}-CartpoleBalance-seed0 on playground CartpoleBalance"
        assert result.stderr.startswith(start)
        assert not [n for n in NOISE if n in result.stdout + result.stderr], result.stderr
        assert [int(r[0]) for r in evaluations(out)] == [0, 256, 512]
        assert all(0 <= float(r[1]) <= 20 for r in evaluations(out))
        config = json.loads((out / "config.json").read_text())
        assert config["env_backend"] == "playground" and config["backend"] == "jax"
        assert config["loop"]["episode_length"] == 20 and config["action_repeat"] == 1
        summary = json.loads((out / "summary.json").read_text())
        # Updates start at 128 transitions: 49 iterations x 2 updates.
        assert summary["env_steps"] == 512 and summary["updates"] == 98

    def test_killed_by_sigkill_and_resumed_ends_as_the_uninterrupted_one(self, runs, tmp_path):
        reference_result, reference = runs("SAC")
        assert reference_result.returncode == 0, reference_result.stderr
        args = (*FLAGS, "--policy", "SAC", "--checkpoint_every", "256")
        assert_resumes_bitwise(run, args, tmp_path / "run", 256, reference)

    def test_render_and_evaluate_the_trained_agent(self, runs, tmp_path):
        """20-step episodes: 20 frames each; the evaluation loads the render's program."""
        result, out = runs("SAC")
        assert result.returncode == 0, result.stderr
        evaluation = render_and_evaluate(out, tmp_path / "cartpole.mp4", 40)
        assert all(0 <= r <= 20 for r in evaluation["returns"])

    def test_a_population_of_two_sac_agents_learns_to_balance(self, tmp_path):
        """Two seeds in one vmapped run: each agent's deterministic policy, 86 and 62 at
        the start, ends above 170 after 6,000 steps (8 environments x 8 updates); the
        uniform random policy scores about 110 on this 200-step CartpoleBalance."""
        out = tmp_path / "population"
        result = run(
            "--policy", "SAC", "--env", "CartpoleBalance", "--num_seeds", "2",
            "--max_timesteps", "6000", "--num_envs", "8", "--updates_per_step", "8",
            "--start_timesteps", "500", "--batch_size", "64", "--hidden_sizes", "64,64",
            "--eval_freq", "2000", "--eval_episodes", "4", "--episode_length", "200",
            "--no_progress", "--save_dir", str(out),
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert result.stderr.startswith("jax_rl: 2 agents (seeds 0-1) on playground")
        assert "2 agents, 6,000 environment steps each" in result.stdout
        summary = json.loads((out / "summary.json").read_text())
        assert [a["seed"] for a in summary["agents"]] == [0, 1]
        random_policy = summary["uniform_random_return_mean"]
        curves = [evaluations(out / f"SAC-seed{seed}") for seed in (0, 1)]
        assert curves[0] != curves[1]  # two agents, not one trained twice
        for curve in curves:
            assert [int(r[0]) for r in curve] == [0, 2000, 4000, 6000]
            first, last = float(curve[0][1]), float(curve[-1][1])
            assert last >= first + 50 and last >= random_policy + 30, (curve, random_policy)


def test_bad_name_exits_2_with_one_line_listing_both_registries(tmp_path):
    result = run("--env", "CartpoleSwingUp", "--save_dir", str(tmp_path / "never"))
    assert result.returncode == 2, result.stderr
    assert result.stdout == "" and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: unknown Brax environment or Playground task")
    assert "halfcheetah" in result.stderr and "CartpoleSwingup" in result.stderr
    assert not (tmp_path / "never").exists()


def test_a_task_without_its_robot_models_is_refused_with_what_to_do(monkeypatch):
    from jax_rl.envs import playground

    monkeypatch.setattr(playground, "_menagerie_ready", lambda: False)
    assert playground.suite_of("Go1JoystickFlatTerrain") == "locomotion"
    with pytest.raises(playground.MissingAssetsError, match="needs MuJoCo Menagerie") as error:
        playground.check_environment("Go1JoystickFlatTerrain")
    assert "clone https://github.com/google-deepmind/mujoco_menagerie" in str(error.value)
    playground.check_environment("HumanoidWalk")  # the DM Control Suite needs none
