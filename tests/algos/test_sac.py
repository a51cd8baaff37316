import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jax_rl.algos import sac
from jax_rl.algos.critics import scalar
from jax_rl.core.transition import Transition

from .hand_networks import (
    ACTION_SIZE,
    OBS_SIZE,
    constant_actor_params,
    critic_params,
    critic_values,
)

W, C = [3.0, 1.0], [0.5, -0.5]
W_T, C_T = [2.0, 1.0], [0.0, 1.0]
MEAN, LOG_STD = 0.3, -0.7
ALPHA = 0.2


def hand_state(**config) -> sac.State:
    config = {"hidden_sizes": (1,), "init_alpha": ALPHA, **config}
    state = sac.init(jax.random.key(0), OBS_SIZE, ACTION_SIZE, sac.Config(**config))
    return state.replace(
        actor_params=constant_actor_params([MEAN, LOG_STD]),
        critic_params=critic_params(W, C),
        target_critic_params=critic_params(W_T, C_T),
    )


def batch() -> Transition:
    return Transition(
        obs=jnp.array([[0.1, 0.2], [0.3, -0.4], [1.0, 1.0]]),
        action=jnp.array([[0.5], [-1.0], [0.0]]),
        reward=jnp.array([1.0, 0.0, -2.0]),
        discount=jnp.array([1.0, 0.0, 1.0]),
        next_obs=jnp.array([[0.0, 0.0], [0.5, 0.5], [-1.0, 0.2]]),
    )


def hand_sample(key, n):
    """The reparameterised sample the policy draws with `key`, and its log-probability."""
    u = MEAN + math.exp(LOG_STD) * np.asarray(jax.random.normal(key, (n, 1)), np.float64)
    log_prob = stats.norm.logpdf(u, MEAN, math.exp(LOG_STD)) - np.log(1 - np.tanh(u) ** 2)
    return np.tanh(u), log_prob.sum(axis=1)


def test_soft_td_target_by_hand():
    state, b, key = hand_state(), batch(), jax.random.key(11)
    a_next, log_prob = hand_sample(key, 3)
    soft_v = critic_values(W_T, C_T, a_next).min(axis=0) - ALPHA * log_prob
    expected = np.array([1.0, 0.0, -2.0]) + 0.99 * np.array([1.0, 0.0, 1.0]) * soft_v
    np.testing.assert_allclose(scalar.target(sac.SIDE, state, b, key), expected, rtol=1e-5)


def test_critic_loss_by_hand():
    state, b = hand_state(), batch()
    target = np.array([1.0, 2.0, 3.0])
    q = critic_values(W, C, np.asarray(b.action))
    expected = 0.5 * ((q - target) ** 2).mean(axis=1).sum()
    loss, priority = scalar.loss(
        state.critic_params, sac.SIDE, state, b, jnp.asarray(target, jnp.float32)
    )
    np.testing.assert_allclose(loss, expected, rtol=1e-6)
    assert priority is None  # uniform replay: no priorities


def test_actor_loss_by_hand():
    state, b, key = hand_state(), batch(), jax.random.key(4)
    a, log_prob = hand_sample(key, 3)
    expected = (ALPHA * log_prob - critic_values(W, C, a).min(axis=0)).mean()
    loss, (lp, stats) = sac.actor_loss(state.actor_params, state, b.obs, key)
    np.testing.assert_allclose(loss, expected, rtol=1e-5)
    assert stats is None  # no BatchRenorm: no running statistics
    np.testing.assert_allclose(lp, log_prob, rtol=1e-5)


def test_alpha_loss_by_hand_and_its_direction():
    log_prob = jnp.array([-1.0, 0.5])
    value = sac.alpha_loss(jnp.log(0.2), log_prob, -1.0)
    np.testing.assert_allclose(value, -math.log(0.2) * np.mean([-2.0, -0.5]), rtol=1e-6)
    # Entropy (-log_prob) above the target: the gradient step lowers alpha.
    high_entropy = jnp.array([-3.0, -3.0])
    grad = jax.grad(sac.alpha_loss)(jnp.log(0.2), high_entropy, -1.0)
    assert float(grad) > 0


def test_update_changes_everything_it_should():
    state = hand_state()
    new, metrics = jax.jit(sac.update)(state, batch(), jax.random.key(0))
    assert int(new.step) == 1
    assert float(new.log_alpha) != float(state.log_alpha)
    assert set(metrics) >= {"loss/critic", "loss/actor", "loss/alpha", "dual/alpha"}
    bias = lambda p: np.asarray(p["params"]["members"]["MLP_0"]["Dense_1"]["bias"])  # noqa: E731
    np.testing.assert_allclose(
        bias(new.target_critic_params),
        0.995 * bias(state.target_critic_params) + 0.005 * bias(new.critic_params),
        rtol=1e-6,
    )


def test_a_zero_alpha_learning_rate_keeps_the_temperature_fixed():
    state = hand_state(alpha_lr=0.0)
    update = jax.jit(sac.update)
    for i in range(3):
        state, metrics = update(state, batch(), jax.random.key(i))
    assert float(state.log_alpha) == float(jnp.log(jnp.float32(ALPHA)))
    np.testing.assert_allclose(metrics["dual/alpha"], ALPHA, rtol=1e-6)
    with pytest.raises(ValueError, match="alpha_lr"):
        sac.Config(alpha_lr=-1e-4)


def test_target_entropy_defaults_to_minus_action_size():
    state = sac.init(jax.random.key(0), 3, 4, sac.Config(hidden_sizes=(4,)))
    assert float(state.config.target_entropy_per_dim) * state.action_size == -4.0


def test_acting_samples_unless_deterministic():
    state = hand_state()
    obs = jnp.zeros((10_000, OBS_SIZE))
    det = sac.act(state, obs, jax.random.key(1), deterministic=True)
    np.testing.assert_allclose(det, np.tanh(MEAN), rtol=1e-6)
    sampled = np.asarray(sac.act(state, obs, jax.random.key(1), deterministic=False))
    expected, _ = hand_sample(jax.random.key(1), 10_000)
    np.testing.assert_allclose(sampled, expected, rtol=1e-5, atol=1e-6)
    assert sampled.std() > 0.3


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("critic_lr", -1.0, "critic_lr must be > 0"),
        ("discount", 1.01, r"discount must be in \[0, 1\]"),
        ("init_alpha", 0.0, "init_alpha must be > 0"),
    ],
)
def test_config_rejects_bad_values(field, value, message):
    with pytest.raises(ValueError, match=message):
        sac.Config(**{field: value})
