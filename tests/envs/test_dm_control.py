import numpy as np
import pytest

from jax_rl.envs import UnknownEnvironmentError
from jax_rl.envs.dm_control import DMControlEnv, check_task, flatten_observation


def test_observations_are_flat_float32():
    env = DMControlEnv("cartpole", "swingup", seed=0)
    obs = env.reset()
    assert obs.dtype == np.float32 and obs.shape == (env.obs_size,) == (5,)
    step = env.step(np.zeros(env.action_size, np.float32))
    assert step.next_obs.dtype == np.float32 and step.next_obs.shape == (5,)


def test_flatten_keeps_spec_order_and_casts():
    flat = flatten_observation({"b": np.array([1.0, 2.0]), "a": np.array([[3.0]])})
    assert flat.dtype == np.float32
    np.testing.assert_array_equal(flat, [1.0, 2.0, 3.0])


def test_episode_ends_by_time_limit_with_discount_one():
    env = DMControlEnv("cartpole", "swingup", seed=0)
    env.reset()
    steps, step = 0, None
    while step is None or not step.last:
        step = env.step(np.ones(env.action_size, np.float32))
        steps += 1
        if not step.last:
            assert step.discount == 1.0
    assert steps == 1000
    assert step.discount == 1.0  # truncation, not termination: bootstrap through it
    assert np.isfinite(step.next_obs).all()


def test_actions_outside_the_unit_box_are_clipped():
    a, b = DMControlEnv("cartpole", "swingup", seed=3), DMControlEnv("cartpole", "swingup", seed=3)
    a.reset(), b.reset()
    np.testing.assert_array_equal(
        a.step(np.array([5.0])).next_obs, b.step(np.array([1.0])).next_obs
    )


def test_same_seed_same_initial_state():
    first = DMControlEnv("cartpole", "swingup", seed=5).reset()
    again = DMControlEnv("cartpole", "swingup", seed=5).reset()
    other = DMControlEnv("cartpole", "swingup", seed=6).reset()
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(UnknownEnvironmentError, match="valid domains: .*cartpole.*walker"):
        check_task("cartpol", "swingup")
    with pytest.raises(UnknownEnvironmentError, match="valid tasks: .*balance.*swingup"):
        check_task("cartpole", "swing")
