"""SALE (jax_rl.algos.sale) and TD7's parts of TD3: AvgL1Norm and the encoders' loss by
hand, the fixed encoders swapped only on their schedule, hard target copies, value clipping."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_rl.algos import sac, sale, td3
from jax_rl.algos.critics import scalar
from jax_rl.core.transition import Transition


def test_avg_l1_norm_by_hand():
    x = jnp.array([[1.0, -3.0, 2.0, -2.0], [0.0, 0.0, 0.0, 0.0]])
    # mean |x| of row 0 is 2; a zero row stays zero (the 1e-8 floor).
    np.testing.assert_allclose(sale.avg_l1_norm(x), [[0.5, -1.5, 1.0, -1.0], [0, 0, 0, 0]])


def elu(x):
    return np.where(x > 0, x, np.exp(np.minimum(x, 0)) - 1)


def test_encoder_loss_by_hand_on_two_rows():
    """f and g of one hidden layer (width 2, ELU), embeddings of size 2, one action."""
    f1, f2 = np.array([[1.0, -1.0], [0.5, 2.0]]), np.array([[1.0, 0.0], [-1.0, 2.0]])
    g1, g2 = np.array([[1.0, 0.5], [0.0, -1.0], [2.0, 1.0]]), np.array([[1.0, 1.0], [0.5, -2.0]])
    bias = np.array([0.1, -0.2])
    params = {
        "state": [{"kernel": jnp.asarray(f1), "bias": jnp.asarray(bias)},
                  {"kernel": jnp.asarray(f2), "bias": jnp.zeros(2)}],
        "state_action": [{"kernel": jnp.asarray(g1), "bias": jnp.zeros(2)},
                         {"kernel": jnp.asarray(g2), "bias": jnp.asarray(bias)}],
    }  # fmt: skip
    obs = np.array([[1.0, 2.0], [-1.0, 0.5]])
    action = np.array([[0.5], [-1.0]])
    next_obs = np.array([[0.0, 1.0], [2.0, -1.0]])

    def zs(s):
        h = elu(s @ f1 + bias) @ f2
        return h / np.abs(h).mean(axis=-1, keepdims=True)

    def zsa(z, a):
        return elu(np.concatenate([z, a], axis=-1) @ g1) @ g2 + bias

    expected = ((zsa(zs(obs), action) - zs(next_obs)) ** 2).mean()
    got = sale.loss(params, jnp.asarray(obs), jnp.asarray(action), jnp.asarray(next_obs))
    assert float(got) == pytest.approx(expected, rel=1e-5)
    # The target is a constant: the gradient is that of the loss against z_s(s') given.
    obs, action, next_obs = jnp.asarray(obs), jnp.asarray(action), jnp.asarray(next_obs)
    target = sale.state_embedding(params, next_obs)

    def against_given(p):
        prediction = sale.state_action_embedding(p, sale.state_embedding(p, obs), action)
        return ((prediction - target) ** 2).mean()

    got = jax.tree_util.tree_leaves(jax.grad(sale.loss)(params, obs, action, next_obs))
    wanted = jax.tree_util.tree_leaves(jax.grad(against_given)(params))
    for x, y in zip(got, wanted, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-7)


def batch(seed: int = 0, size: int = 16) -> Transition:
    keys = jax.random.split(jax.random.key(seed), 4)
    return Transition(
        obs=jax.random.normal(keys[0], (size, 3)),
        action=jax.random.uniform(keys[1], (size, 2), minval=-1, maxval=1),
        reward=jax.random.normal(keys[2], (size,)),
        discount=jnp.ones(size),
        next_obs=jax.random.normal(keys[3], (size, 3)),
    )


SMALL = {"hidden_sizes": (16,), "encoder_hidden_sizes": (8,), "embedding_size": 4}


def same(a, b) -> bool:
    return all(
        bool(jnp.array_equal(x, y))
        for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True)
    )


@pytest.mark.parametrize("algo", [td3, sac], ids=["TD3", "SAC"])
def test_fixed_encoders_change_only_every_encoder_every_updates(algo):
    config = algo.Config(representation="sale", encoder_every=3, **SMALL)
    state = algo.init(jax.random.key(0), 3, 2, config)
    first = state.encoders.fixed
    assert same(first, state.encoders.params) and same(first, state.encoders.fixed_target)
    update = jax.jit(algo.update)
    trained = []
    for i in range(6):
        before = state.encoders
        state, metrics = update(state, batch(i), jax.random.key(i))
        trained.append(state.encoders.params)
        assert not same(state.encoders.params, before.params)  # the encoders train every update
        assert float(metrics["loss/encoder"]) > 0
        if state.step in (3, 6):  # the swap: fixed_target <- fixed <- trained
            assert same(state.encoders.fixed_target, before.fixed)
            assert same(state.encoders.fixed, state.encoders.params)
        else:
            assert same(state.encoders.fixed, before.fixed)
            assert same(state.encoders.fixed_target, before.fixed_target)
    assert same(state.encoders.fixed_target, trained[2])


def test_the_networks_see_the_embeddings():
    config = td3.Config(representation="sale", **SMALL)
    state = td3.init(jax.random.key(0), 3, 2, config)
    # actor: [s (3), z_s (4)]; critic: [s (3), z_sa (4), z_s (4)] and a (2).
    assert state.actor_params["params"]["MLP_0"]["Dense_0"]["kernel"].shape == (7, 16)
    kernel = jax.tree_util.tree_leaves(state.critic_params)
    assert any(leaf.shape[-2:] == (13, 16) for leaf in kernel)
    assert td3.act(state, jnp.zeros((5, 3)), jax.random.key(0), True).shape == (5, 2)


def test_hard_target_copies_and_value_clipping():
    """target_every 2 copies actor and critics to their targets at updates 2, 4, ...; the
    clip is [0, 0] until then, and afterwards the range of the targets seen so far."""
    config = td3.Config(target_every=2, clip_values=True, policy_freq=1, hidden_sizes=(16,))
    state = td3.init(jax.random.key(0), 3, 2, config)
    big = float(np.finfo(np.float32).max)
    assert state.value_range.tolist() == [0.0, 0.0, big, -big]
    b = batch()
    # Before any target update the target critics' value is clipped to 0: y = r.
    np.testing.assert_allclose(
        scalar.target(td3.SIDE, state, b, jax.random.key(1)), b.reward, rtol=1e-6
    )
    state, _ = td3.update(state, b, jax.random.key(1))
    np.testing.assert_allclose(state.value_range[2:], [b.reward.min(), b.reward.max()], rtol=1e-6)
    assert state.value_range[:2].tolist() == [0.0, 0.0]
    assert not same(state.target_actor_params, state.actor_params)  # no copy at update 1
    state, _ = td3.update(state, batch(1), jax.random.key(2))
    assert same(state.target_actor_params, state.actor_params)
    assert same(state.target_critic_params, state.critic_params)
    np.testing.assert_array_equal(state.value_range[:2], state.value_range[2:])
    low, high = (float(v) for v in state.value_range[:2])
    target = scalar.target(td3.SIDE, state, batch(5), jax.random.key(3))
    excess = (target - batch(5).reward) / 0.99  # the clipped next value
    assert float(excess.min()) >= low - 1e-5 and float(excess.max()) <= high + 1e-5


def test_sale_population_axes_and_checkpoint_shapes_are_plain_arrays():
    """The encoders' sub-state is a pytree of arrays (what checkpoints and vmap need)."""
    state = sac.init(jax.random.key(0), 3, 2, sac.Config(representation="sale", **SMALL))
    leaves = jax.tree_util.tree_leaves(state.encoders)
    assert leaves and all(isinstance(leaf, jax.Array) for leaf in leaves)
