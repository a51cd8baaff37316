"""Observations as vectors: [state | privileged state] for an asymmetric actor-critic."""

import jax.numpy as jnp
import numpy as np
import pytest

from jax_rl.envs.observation import Layout, NoPrivilegedStateError

PRIVILEGED = {"state": jnp.array([1.0, 2.0]), "privileged_state": jnp.array([[3.0], [4.0]])}


def test_auto_puts_the_state_first_and_tells_the_actor_its_size():
    layout = Layout.of(PRIVILEGED, "auto")
    assert (layout.size, layout.actor_size) == (4, 2)
    np.testing.assert_array_equal(layout.flatten(PRIVILEGED), [1, 2, 3, 4])


def test_off_observes_the_state_alone():
    layout = Layout.of(PRIVILEGED, "off")
    assert (layout.size, layout.actor_size) == (2, 0)
    np.testing.assert_array_equal(layout.flatten(PRIVILEGED), [1, 2])


def test_other_observations_are_flattened_whole():
    obs = {"b": jnp.array([2.0]), "a": jnp.array([1.0, 1.5])}
    layout = Layout.of(obs)
    assert (layout.size, layout.actor_size) == (3, 0)
    np.testing.assert_array_equal(layout.flatten(obs), [1, 1.5, 2])  # key order
    array = jnp.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(Layout.of(array).flatten(array), np.arange(6.0))
    assert Layout.of(array).flatten(array).dtype == jnp.float32


def test_on_refuses_a_task_without_a_privileged_state():
    with pytest.raises(NoPrivilegedStateError, match="not a dict with 'state' and"):
        Layout.of({"a": jnp.zeros(2)}, "on", "task X")
    with pytest.raises(ValueError, match="asymmetric_obs must be one of auto, on, off"):
        Layout.of(PRIVILEGED, "sometimes")
