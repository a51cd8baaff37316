"""Running observation statistics: merged batch by batch, they equal NumPy's over all
observations; learners normalise with them when acting and updating."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_rl import normalization
from jax_rl.algos import mpo, sac, td3
from jax_rl.transition import Transition


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
    state = algo.observe(state, seen)
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
    assert algo.observe(plain, seen) is plain
