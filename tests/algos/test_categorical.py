"""The categorical critic: the projection, clipped double Q over distributions, the loss,
and TD3 and SAC with it (hand-computed cases on three atoms z = 0, 1, 2)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_rl.algos import sac, td3
from jax_rl.algos.critics import categorical

from .test_td3 import batch as _batch  # the hand-computed tests' batch

ATOMS = categorical.support(0.0, 2.0, 3)  # z = [0, 1, 2], spacing 1
PROBS = jnp.array([0.2, 0.3, 0.5])


def project_one(reward: float, discount: float, shift: float = 0.0) -> np.ndarray:
    """The target of one transition whose next-state distribution is PROBS."""
    logits = jnp.log(PROBS)[None, None]  # [E=1, B=1, K]
    target = categorical.target_distribution(
        logits, ATOMS, jnp.array([reward]), jnp.array([discount]), shift=jnp.array([shift])
    )
    return np.asarray(target[0])


def test_support_is_evenly_spaced():
    np.testing.assert_allclose(categorical.support(-10.0, 10.0, 5), [-10, -5, 0, 5, 10])


def test_projection_mid_episode_by_hand():
    # r 0.5, gamma * mask 0.5: atoms move to 0.5, 1.0, 1.5. 0.5 splits 0.2 evenly between
    # z0 and z1; 1.0 puts 0.3 on z1; 1.5 splits 0.5 evenly between z1 and z2.
    np.testing.assert_allclose(project_one(0.5, 0.5), [0.1, 0.65, 0.25], atol=1e-6)


def test_projection_at_a_terminal_collapses_onto_the_reward():
    # mask 0: every atom moves to r = 1.3, 70% of the way from z2 to z1.
    np.testing.assert_allclose(project_one(1.3, 0.0), [0.0, 0.7, 0.3], atol=1e-6)


def test_projection_at_a_truncation_bootstraps_and_clips_above_the_support():
    # A time limit keeps mask 1: gamma 0.9 moves the atoms to 1.0, 1.9, 2.8; 1.9 splits
    # 0.3 as 0.03 / 0.27 between z1 and z2; 2.8 lies above v_max and lands on z2.
    np.testing.assert_allclose(project_one(1.0, 0.9), [0.0, 0.23, 0.77], atol=1e-6)


def test_projection_clips_below_the_support():
    np.testing.assert_allclose(project_one(-5.0, 0.0), [1.0, 0.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(project_one(-5.0, 0.9), [1.0, 0.0, 0.0], atol=1e-6)


def test_sac_entropy_term_shifts_the_atoms():
    # r + 1.0 * (z - 0.5) with r = 1: atoms at 0.5, 1.5, 2.5 (the last clipped to z2).
    np.testing.assert_allclose(project_one(1.0, 1.0, shift=0.5), [0.1, 0.25, 0.65], atol=1e-6)


def test_projection_keeps_probability_mass():
    key = jax.random.key(0)
    probs = jax.nn.softmax(jax.random.normal(key, (64, 51)))
    atoms = categorical.support(-3.0, 3.0, 51)
    moved = 0.3 + 0.97 * atoms[None] * jax.random.uniform(key, (64, 1), minval=0, maxval=2)
    projected = categorical.project(moved, probs, atoms)
    np.testing.assert_allclose(projected.sum(axis=1), 1.0, rtol=1e-5)
    assert float(projected.min()) >= 0.0


def test_clipped_double_q_keeps_the_distribution_with_the_lower_mean_per_sample():
    low = jnp.log(jnp.array([0.6, 0.3, 0.1]))  # mean 0.5
    high = jnp.log(jnp.array([0.1, 0.3, 0.6]))  # mean 1.5
    logits = jnp.stack([jnp.stack([low, high]), jnp.stack([high, low])])  # [E=2, B=2, K]
    chosen = categorical.lowest_mean(logits, ATOMS)
    np.testing.assert_allclose(chosen, [[0.6, 0.3, 0.1], [0.6, 0.3, 0.1]], atol=1e-6)


def test_cross_entropy_by_hand():
    logits = jnp.array([[[0.0, 1.0, 2.0]], [[1.0, 1.0, 1.0]]])  # [E=2, B=1, K=3]
    target = jnp.array([[0.25, 0.25, 0.5]])
    log_softmax = np.array([0.0, 1.0, 2.0]) - np.log(np.exp([0.0, 1.0, 2.0]).sum())
    first = -(np.array([0.25, 0.25, 0.5]) * log_softmax).sum()
    second = np.log(3.0)  # a uniform prediction costs log K whatever the target
    np.testing.assert_allclose(categorical.cross_entropy(logits, target), first + second, rtol=1e-6)


def test_mean_value_is_the_expectation_over_the_atoms():
    np.testing.assert_allclose(categorical.mean_value(jnp.log(PROBS), ATOMS), 1.3, rtol=1e-6)


@pytest.mark.parametrize("algo", [td3, sac], ids=["TD3", "SAC"])
def test_categorical_learner_loss_is_the_cross_entropy_to_its_target(algo):
    config = algo.Config(hidden_sizes=(8,), critic="categorical", num_atoms=11, v_min=-5.0)
    state = algo.init(jax.random.key(0), 2, 1, config.replace(v_max=5.0))
    batch, key = _batch(), jax.random.key(1)
    target = categorical.target(algo.SIDE, state, batch, key)
    assert target.shape == (3, 11)
    np.testing.assert_allclose(target.sum(axis=1), 1.0, rtol=1e-5)
    # The terminal transition (index 1) puts all its mass on the atom at r = 0.
    np.testing.assert_allclose(target[1], np.eye(11)[5], atol=1e-6)
    _, critic = algo._networks(state.config, 1)
    logits = critic.apply(state.critic_params, batch.obs, batch.action)
    expected = -(np.asarray(target)[None] * np.asarray(jax.nn.log_softmax(logits))).sum(-1)
    loss, _ = categorical.loss(state.critic_params, algo.SIDE, state, batch, target)
    np.testing.assert_allclose(loss, expected.mean(axis=1).sum(), rtol=1e-5)


@pytest.mark.parametrize(
    "values, message",
    [
        (dict(critic="categorical", num_atoms=1), "num_atoms must be an integer >= 2"),
        (dict(v_min=1.0, v_max=1.0), "v_min must be below v_max"),
        (dict(v_min=float("nan")), "must be finite"),
        (dict(critic="distributional"), "critic must be one of scalar, categorical, crossq"),
        (dict(critic_hidden_sizes=(0,)), "critic_hidden_sizes must be positive"),
        (dict(matmul_dtype="fp8"), "matmul_dtype must be one of float32, bf16"),
        (dict(weight_decay=-0.1), "weight_decay must be >= 0"),
    ],
)
@pytest.mark.parametrize("algo", [td3, sac], ids=["TD3", "SAC"])
def test_recipe_config_rejects_bad_values(algo, values, message):
    with pytest.raises(ValueError, match=message):
        algo.Config(**values)
