import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_rl.algos import td3
from jax_rl.algos.critics import scalar
from jax_rl.core.transition import Transition

from .hand_networks import (
    ACTION_SIZE,
    OBS_SIZE,
    constant_actor_params,
    critic_params,
    critic_values,
)

W, C = [3.0, 1.0], [0.5, -0.5]  # online critics
W_T, C_T = [2.0, 1.0], [0.0, 1.0]  # target critics
B_ACTOR, B_TARGET_ACTOR = 0.4, -0.3


def hand_state(**config) -> td3.State:
    state = td3.init(
        jax.random.key(0), OBS_SIZE, ACTION_SIZE, td3.Config(hidden_sizes=(1,), **config)
    )
    return state.replace(
        actor_params=constant_actor_params([B_ACTOR]),
        target_actor_params=constant_actor_params([B_TARGET_ACTOR]),
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


def test_td_target_by_hand():
    state, b, key = hand_state(), batch(), jax.random.key(7)
    noise = np.clip(0.2 * np.asarray(jax.random.normal(key, (3, 1))), -0.5, 0.5)
    next_action = np.clip(np.tanh(B_TARGET_ACTOR) + noise, -1, 1)
    next_q = critic_values(W_T, C_T, next_action).min(axis=0)
    expected = np.array([1.0, 0.0, -2.0]) + 0.99 * np.array([1.0, 0.0, 1.0]) * next_q
    np.testing.assert_allclose(scalar.target(td3.SIDE, state, b, key), expected, rtol=1e-5)


def test_target_noise_is_clipped():
    state = hand_state(policy_noise=100.0, noise_clip=0.05)
    key = jax.random.key(3)
    b = batch()
    # Critic targets are linear in the action for member 1 (w=1): recover a'.
    y = np.asarray(
        scalar.target(
            td3.SIDE,
            state.replace(target_critic_params=critic_params([1.0, 1.0], [0.0, 0.0])),
            b,
            key,
        )
    )
    a_next = (y - np.asarray(b.reward)) / np.where(np.asarray(b.discount) > 0, 0.99, np.nan) - 2.0
    a_next = a_next[np.isfinite(a_next)]
    assert np.all(np.abs(a_next - np.tanh(B_TARGET_ACTOR)) <= 0.05 + 1e-5)


def test_critic_loss_by_hand():
    state, b = hand_state(), batch()
    target = jnp.array([1.0, 2.0, 3.0])
    q = critic_values(W, C, np.asarray(b.action))
    expected = ((q - np.array([1.0, 2.0, 3.0])) ** 2).mean(axis=1).sum()
    loss, priority = scalar.loss(state.critic_params, td3.SIDE, state, b, target)
    np.testing.assert_allclose(loss, expected, rtol=1e-6)
    assert priority is None  # uniform replay: no priorities


def test_actor_loss_uses_first_critic_by_hand():
    state, b = hand_state(), batch()
    a = np.tanh(B_ACTOR)
    expected = -(W[0] * (a + 2.0) + C[0])
    (loss, stats), grads = jax.value_and_grad(td3.actor_loss, has_aux=True)(
        state.actor_params, state, b.obs
    )
    np.testing.assert_allclose(loss, expected, rtol=1e-6)
    assert stats is None  # no BatchRenorm: no running statistics
    # d loss / d bias = -w_1 * (1 - tanh(b)^2)
    grad_bias = grads["params"]["MLP_0"]["Dense_1"]["bias"]
    np.testing.assert_allclose(grad_bias, [-W[0] * (1 - a**2)], rtol=1e-5)


def test_actor_and_targets_update_every_policy_freq_steps():
    state = hand_state(policy_freq=2, tau=0.5)
    update = jax.jit(td3.update)
    one, metrics = update(state, batch(), jax.random.key(1))
    assert int(one.step) == 1
    leaves = lambda tree: jax.tree_util.tree_leaves(tree)  # noqa: E731
    for before, after in zip(leaves(state.actor_params), leaves(one.actor_params), strict=False):
        np.testing.assert_array_equal(before, after)
    for before, after in zip(
        leaves(state.target_critic_params), leaves(one.target_critic_params), strict=False
    ):
        np.testing.assert_array_equal(before, after)
    assert not np.allclose(
        one.critic_params["params"]["members"]["MLP_0"]["Dense_1"]["bias"],
        state.critic_params["params"]["members"]["MLP_0"]["Dense_1"]["bias"],
    )
    two, metrics = update(one, batch(), jax.random.key(2))
    bias = lambda p: np.asarray(p["params"]["MLP_0"]["Dense_1"]["bias"])  # noqa: E731
    assert not np.allclose(bias(two.actor_params), bias(one.actor_params))
    # Polyak with tau = 0.5 after the actor step: halfway to the online networks.
    np.testing.assert_allclose(
        bias(two.target_actor_params),
        0.5 * bias(one.target_actor_params) + 0.5 * bias(two.actor_params),
        rtol=1e-6,
    )
    assert np.isfinite(float(metrics["loss/actor"])) and float(metrics["loss/actor"]) != 0.0


def test_exploration_adds_gaussian_noise_and_stays_in_range():
    state = td3.init(jax.random.key(0), 4, 3, td3.Config(hidden_sizes=(8,), exploration_noise=0.1))
    obs = jnp.zeros((20_000, 4))
    det = td3.act(state, obs, jax.random.key(1), deterministic=True)
    noisy = td3.act(state, obs, jax.random.key(1), deterministic=False)
    diff = np.asarray(noisy - det)
    assert 0.09 < diff.std() < 0.11
    assert float(jnp.abs(noisy).max()) <= 1.0


def test_exploration_std_falls_linearly_over_the_decay_and_stays_flat_after():
    config = td3.Config(
        hidden_sizes=(8,),
        exploration_noise=0.1,
        initial_exploration_noise=0.5,
        exploration_decay=40,
    )
    state = td3.init(jax.random.key(0), 4, 3, config)
    stds = [float(td3.exploration_std(state.replace(step=jnp.int32(t)))) for t in (0, 10, 40, 90)]
    np.testing.assert_allclose(stds, [0.5, 0.4, 0.1, 0.1], rtol=1e-6)
    # Acting uses it: at update 10 the noise has std 0.4.
    obs = jnp.zeros((20_000, 4))
    at_10 = state.replace(step=jnp.int32(10))
    det = td3.act(at_10, obs, jax.random.key(1), deterministic=True)
    noise = np.asarray(jax.random.normal(jax.random.key(2), det.shape))
    noisy = td3.act(at_10, obs, jax.random.key(1), deterministic=False, noise=noise)
    expected = np.clip(np.asarray(det) + 0.4 * noise, -1, 1)
    np.testing.assert_allclose(np.asarray(noisy), expected, atol=1e-6)
    # Without a decay, the published constant std, whatever the initial one says.
    flat = state.replace(config=config.replace(exploration_decay=0), step=jnp.int32(3))
    assert float(td3.exploration_std(flat)) == np.float32(0.1)


def test_update_is_deterministic_given_the_key():
    state = hand_state()
    a, _ = td3.update(state, batch(), jax.random.key(5))
    b, _ = td3.update(state, batch(), jax.random.key(5))
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=False):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("actor_lr", 0.0, "actor_lr must be > 0"),
        ("tau", 1.5, r"tau must be in \[0, 1\]"),
        ("policy_freq", 0, "policy_freq must be a positive integer"),
        ("exploration_noise", -0.1, "exploration_noise must be >= 0"),
        ("exploration_decay", -5, "exploration_decay must be >= 0"),
        ("initial_exploration_noise", -1.0, "initial_exploration_noise must be >= 0"),
        ("hidden_sizes", (256, -1), "hidden_sizes must be positive"),
    ],
)
def test_config_rejects_bad_values(field, value, message):
    with pytest.raises(ValueError, match=message):
        td3.Config(**{field: value})
