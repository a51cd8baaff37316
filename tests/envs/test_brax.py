import functools
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_rl.envs import UnknownEnvironmentError
from jax_rl.envs.brax import BraxEnv, check_environment


@pytest.fixture(scope="module")
def short_env():
    """inverted_pendulum with an 8-step time limit (pushed hard, the pole falls in 7), and
    its step for 3 environments jitted once."""
    env = BraxEnv("inverted_pendulum", "positional", episode_length=8)
    return env, jax.jit(env.step)


def test_time_limit_keeps_true_final_observation_and_discount_one(short_env):
    env, step = short_env
    state = env.reset(jax.random.key(0), 3)
    zero = jnp.zeros((3, env.action_size))
    for _ in range(8):
        before = state
        state, transition, info = step(state, zero)
    # The 8th step ends every episode by time limit: truncation, not termination.
    assert bool(info.truncated.all()) and bool(info.done.all())
    np.testing.assert_array_equal(transition.discount, 1.0)
    # next_obs is the observation the step produced, continuing from the last obs...
    assert not np.allclose(transition.next_obs, before.obs)
    # ...and the environments were reset: the next obs is a fresh initial state.
    assert not np.allclose(state.obs, transition.next_obs)
    np.testing.assert_array_equal(state.steps, 0)
    np.testing.assert_array_equal(info.episode_return, 8.0)  # reward 1 per step


def test_true_terminal_has_discount_zero(short_env):
    env, step = short_env
    state = env.reset(jax.random.key(1), 3)
    push = jnp.ones((3, env.action_size))
    dones = []
    while not dones or not dones[-1].any():
        state, transition, info = step(state, push)
        dones.append(np.asarray(info.done))
    # The pole fell (in 7 steps) before the 8-step time limit.
    assert len(dones) < 8 and dones[-1].all() and not bool(info.truncated.any())
    np.testing.assert_array_equal(transition.discount, 0.0)


def test_resets_draw_fresh_random_initial_states(short_env):
    env, step = short_env
    state = env.reset(jax.random.key(2), 3)  # 3 environments: the step compiled above
    starts = [np.asarray(state.obs)]
    zero = jnp.zeros((3, env.action_size))
    for t in range(16):
        state, _, _ = step(state, zero)
        if (t + 1) % 8 == 0:
            starts.append(np.asarray(state.obs))
    starts = np.concatenate(starts)  # 3 resets x 3 environments
    distinct = {tuple(np.round(row, 6)) for row in starts}
    assert len(distinct) == len(starts)


def test_without_resets_an_ended_environment_steps_on_from_its_end(short_env):
    env, _ = short_env
    step = jax.jit(functools.partial(env.step, reset_finished=False))
    state = env.reset(jax.random.key(4), 3)
    zero = jnp.zeros((3, env.action_size))
    for _ in range(9):
        state, transition, info = step(state, zero)
    # Past the 8-step limit: no fresh initial state, the counters go on counting.
    np.testing.assert_array_equal(state.obs, transition.next_obs)
    np.testing.assert_array_equal(state.steps, 9)
    np.testing.assert_array_equal(state.episode_return, 9.0)
    assert bool(info.truncated.all())


def test_observations_are_float32_and_sizes_match(short_env):
    env, _ = short_env
    state = env.reset(jax.random.key(3), 3)
    assert state.obs.dtype == jnp.float32 and state.obs.shape == (3, env.obs_size)
    assert (env.obs_size, env.action_size) == (4, 1)


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(UnknownEnvironmentError, match="valid environments: .*halfcheetah"):
        check_environment("halfcheeta", "positional")
    with pytest.raises(UnknownEnvironmentError, match="valid backends: positional, spring"):
        check_environment("ant", "warp")


def test_the_model_to_draw_matches_the_joint_positions_it_is_drawn_in(short_env):
    # What jax_rl.run.play's device player draws a Brax run with (the entry points' render
    # tests run on the point mass): one MuJoCo model, and per environment its qpos.
    env, step = short_env
    model = env.mj_model()
    assert model is not None and model.nq > 0
    state = env.reset(jax.random.key(3), 3)
    start = np.asarray(env.qpos(state))
    assert start.shape == (3, model.nq)
    state, _, _ = step(state, jnp.ones((3, env.action_size)))
    assert not np.allclose(np.asarray(env.qpos(state)), start)  # it follows the physics


def test_mjx_is_loaded_without_warp_which_imports_afterwards():
    # A fresh interpreter: Brax's environments load MJX with its GPU back end held off
    # (3 of the 5 s of `import brax` here), silently; `import warp` still works after.
    code = (
        "import sys\n"
        "from jax_rl.envs import brax\n"
        "brax.environment_names()\n"
        "import mujoco.mjx.warp as mjx_warp\n"
        "assert 'warp' not in sys.modules and not mjx_warp.WARP_INSTALLED\n"
        "import warp\n"
        "assert warp.__name__ == 'warp'\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "warp" not in result.stdout + result.stderr, result.stdout + result.stderr
