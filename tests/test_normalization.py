"""Running observation statistics: merged batch by batch, they equal NumPy's over all
observations; learners normalise with them when acting and updating."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_rl.algos import mpo, sac, td3
from jax_rl.core import normalization
from jax_rl.core.transition import Transition


def test_statistics_equal_numpys_over_batches_of_any_size():
    rng = np.random.default_rng(0)
    batches = [rng.normal(3.0, 2.0, (n, 4)).astype(np.float32) for n in (1, 7, 64, 3, 1024)]
    batches[1][:, 2] += 50.0  # a shift between batches: the merge's cross term matters
    stats = normalization.init_stats(4)
    for batch in batches:
        stats = normalization.merge(stats, jnp.asarray(batch))
    everything = np.concatenate(batches)
    assert float(stats.count) == len(everything)
    np.testing.assert_allclose(stats.mean, everything.mean(axis=0), rtol=1e-5)
    np.testing.assert_allclose(normalization.variance(stats), everything.var(axis=0), rtol=1e-4)


def test_normalize_standardises_and_clips():
    data = np.random.default_rng(1).normal(-1.0, 5.0, (4096, 3)).astype(np.float32)
    stats = normalization.merge(normalization.init_stats(3), jnp.asarray(data))
    scaled = np.asarray(normalization.normalize(stats, jnp.asarray(data)))
    np.testing.assert_allclose(scaled.mean(axis=0), 0.0, atol=1e-4)
    np.testing.assert_allclose(scaled.std(axis=0), 1.0, rtol=1e-3)
    far = normalization.normalize(stats, jnp.full((1, 3), 1e6))
    np.testing.assert_allclose(far, normalization.CLIP)
    # Off (no statistics): unchanged.
    np.testing.assert_array_equal(normalization.normalize(None, jnp.arange(3.0)), [0, 1, 2])


@pytest.mark.parametrize("algo", [td3, sac, mpo], ids=["TD3", "SAC", "MPO"])
def test_learner_acts_on_normalised_observations(algo):
    """Observing shifts the statistics; act on raw obs equals act of an un-normalised twin
    on the standardised obs (same parameters)."""
    config = algo.Config(hidden_sizes=(16,), normalize_obs=True)
    state = algo.init(jax.random.key(0), 3, 2, config)
    plain = algo.init(jax.random.key(0), 3, 2, algo.Config(hidden_sizes=(16,)))
    assert plain.obs_stats is None
    seen = jax.random.normal(jax.random.key(1), (32, 3)) * 4.0 + 10.0
    steps = Transition(seen, jnp.zeros((32, 2)), jnp.ones(32), jnp.ones(32), seen)
    state = algo.observe(state, steps)
    assert float(state.obs_stats.count) == 32
    obs = jax.random.normal(jax.random.key(2), (5, 3)) * 4.0 + 10.0
    scaled = normalization.normalize(state.obs_stats, obs)
    np.testing.assert_allclose(
        algo.act(state, obs, jax.random.key(3), True),
        algo.act(plain.replace(obs_stats=None), scaled, jax.random.key(3), True),
        rtol=1e-5,
    )
    # An update leaves the statistics as they are: only collection moves them.
    batch = Transition(obs, jnp.zeros((5, 2)), jnp.ones(5), jnp.ones(5), obs)
    updated, _ = algo.update(state, batch, jax.random.key(4))
    np.testing.assert_array_equal(updated.obs_stats.mean, state.obs_stats.mean)
    # Without normalize_obs, observe changes nothing.
    assert algo.observe(plain, steps) is plain


def test_reward_statistics_follow_each_environments_discounted_return():
    """Two environments, gamma 0.5, three steps; the second terminates at step 2 (its
    return restarts), the first is truncated nowhere: G by hand, then Var[G] and max |G|
    over the six returns, and the scale max(sqrt(Var), max |G| / 5)."""
    rewards = np.array([[1.0, 2.0], [2.0, -4.0], [0.0, 1.0]], np.float32)
    discounts = np.array([[1.0, 1.0], [1.0, 0.0], [1.0, 1.0]], np.float32)
    stats = normalization.init_reward_stats(2)
    assert float(normalization.reward_scale(stats)) == 1.0  # nothing seen yet
    for reward, discount in zip(rewards, discounts, strict=True):
        stats = normalization.merge_rewards(stats, jnp.asarray(reward), jnp.asarray(discount), 0.5)
    # env 0: 1, 0.5*1+2 = 2.5, 0.5*2.5+0 = 1.25; env 1: 2, 0.5*2-4 = -3, 0*(-3)+1 = 1
    everything = np.array([1.0, 2.0, 2.5, -3.0, 1.25, 1.0])
    np.testing.assert_allclose(stats.carry, [0.625, 0.5])  # 0.5 * G_3, both go on
    np.testing.assert_allclose(normalization.variance(stats.moments), [everything.var()], rtol=1e-5)
    assert float(stats.peak) == 3.0
    spread = np.sqrt(everything.var() + 1e-8)  # 1.86 > 3 / 5
    np.testing.assert_allclose(normalization.reward_scale(stats), spread, rtol=1e-5)
    # One return alone has no spread: the bound max |G| / 5 sets the scale.
    one = normalization.merge_rewards(
        normalization.init_reward_stats(1), jnp.array([10.0]), jnp.ones(1), 0.5
    )
    np.testing.assert_allclose(normalization.reward_scale(one), 10.0 / 5.0)


@pytest.mark.parametrize("algo", [td3, sac, mpo], ids=["TD3", "SAC", "MPO"])
def test_scaled_rewards_train_as_the_divided_rewards(algo):
    """With scale_rewards an update on rewards r equals the update of a twin without it on
    r / scale: same parameters and loss. Observing moves the returns; updating does not."""
    config = algo.Config(hidden_sizes=(16,), scale_rewards=True)
    state = algo.init(jax.random.key(0), 3, 2, config, num_envs=4)
    plain = algo.init(jax.random.key(0), 3, 2, algo.Config(hidden_sizes=(16,)))
    assert plain.reward_stats is None and state.reward_stats.carry.shape == (4,)
    obs = jax.random.normal(jax.random.key(1), (4, 3))
    for reward in (3.0, -1.0, 7.0):
        step = Transition(obs, jnp.zeros((4, 2)), jnp.full(4, reward), jnp.ones(4), obs)
        state = algo.observe(state, step)
    scale = normalization.reward_scale(state.reward_stats)
    assert float(scale) > 1.5  # returns 3, 0.5, 7.5: far from scale 1
    batch = Transition(obs, jnp.zeros((4, 2)), jnp.arange(4.0), jnp.ones(4), obs)
    updated, metrics = algo.update(state, batch, jax.random.key(2))
    twin, twin_metrics = algo.update(
        plain, batch.replace(reward=batch.reward / scale), jax.random.key(2)
    )
    for key in metrics:
        np.testing.assert_allclose(metrics[key], twin_metrics[key], rtol=1e-5, atol=1e-6)
    for leaf, twin_leaf in zip(
        jax.tree_util.tree_leaves(updated.critic_params),
        jax.tree_util.tree_leaves(twin.critic_params),
        strict=True,
    ):
        np.testing.assert_allclose(leaf, twin_leaf, rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(updated.reward_stats.carry, state.reward_stats.carry)
