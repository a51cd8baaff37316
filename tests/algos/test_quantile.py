"""TQC's truncated quantile critic (`critic = "quantile"`, `jax_rl.algos.critics.quantile`):
its target and quantile Huber loss by hand, and TD3 and SAC training with it."""

import ast
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_rl.algos import critics, sac, td3
from jax_rl.algos.critics import quantile
from jax_rl.core.transition import Transition

TQC_2X3 = dict(critic="quantile", num_critics=2, num_quantiles=3, quantiles_dropped=1)
# Each critic outputs its last bias whatever (s, a) is: first-layer weights and biases 0.
TARGET_QUANTILES = np.array([[1.0, 5.0, 3.0], [2.0, 0.0, 4.0]])  # [N = 2, M = 3]


def constant_critics(params, quantiles):
    """Critic parameters [N, ...] whose members output `quantiles` [N, M] everywhere."""
    mlp = jax.tree_util.tree_map(jnp.zeros_like, params)
    mlp["params"]["members"]["MLP_0"]["Dense_1"]["bias"] = jnp.asarray(quantiles, jnp.float32)
    return mlp


def batch():
    return Transition(
        obs=jnp.array([[0.1, 0.2], [0.3, -0.4]]),
        action=jnp.array([[0.5], [-1.0]]),
        reward=jnp.array([1.0, -2.0]),
        discount=jnp.array([1.0, 0.0]),
        next_obs=jnp.array([[0.0, 0.0], [0.5, 0.5]]),
    )


def test_truncation_pools_sorts_and_drops_the_largest():
    next_quantiles = jnp.asarray(TARGET_QUANTILES[:, None, :])  # [N, B = 1, M]
    np.testing.assert_array_equal(quantile.truncated(next_quantiles, 1), [[0, 1, 2, 3, 4]])
    np.testing.assert_array_equal(quantile.truncated(next_quantiles, 4), [[0, 1]])


@pytest.mark.parametrize("algo", [td3, sac], ids=["TD3", "SAC"])
def test_target_by_hand_two_critics_three_quantiles_one_dropped(algo):
    state = algo.init(jax.random.key(0), 2, 1, algo.Config(hidden_sizes=(1,), **TQC_2X3))
    state = state.replace(
        target_critic_params=constant_critics(state.target_critic_params, TARGET_QUANTILES)
    )
    key, b = jax.random.key(3), batch()
    _, _, shift = algo.SIDE.next(state, b.next_obs, key)  # SAC: alpha log pi(a'|s'); TD3 none
    shift = np.zeros(2) if shift is None else np.asarray(shift)
    kept = np.array([0.0, 1.0, 2.0, 3.0, 4.0])  # the pooled six, sorted, the 5 dropped
    expected = np.array([1.0, -2.0])[:, None] + 0.99 * np.array([1.0, 0.0])[:, None] * (
        kept[None] - shift[:, None]
    )
    y = quantile.target(algo.SIDE, state, b, key)
    assert y.shape == (2, 5)
    np.testing.assert_allclose(y, expected, rtol=1e-6)
    assert np.all(np.asarray(y[1]) == -2.0)  # a terminal: every target quantile is r


def test_quantile_huber_loss_by_hand():
    quantiles = jnp.array([[[0.0, 1.0]]])  # one critic, one row, M = 2: tau 0.25, 0.75
    target = jnp.array([[0.5, 3.0]])
    # u = y_j - theta_m: theta 0: (0.5, 3), theta 1: (-0.5, 2); Huber 0.125, 2.5, 0.125, 1.5;
    # weights |tau - 1{u < 0}|: 0.25, 0.25, 0.25, 0.75.
    expected = (0.25 * 0.125 + 0.25 * 2.5 + 0.25 * 0.125 + 0.75 * 1.5) / 4
    np.testing.assert_allclose(quantile.quantile_huber(quantiles, target), expected, rtol=1e-6)
    assert float(quantile.quantile_huber(quantiles, jnp.array([[0.0, 1.0]]))) > 0  # not matched
    assert float(quantile.quantile_huber(jnp.array([[[2.0, 2.0]]]), jnp.array([[2.0]]))) == 0.0


@pytest.mark.parametrize("algo", [td3, sac], ids=["TD3", "SAC"])
def test_learners_train_the_quantile_critic_towards_a_fixed_target(algo):
    """N = 3 critics of M = 5 quantiles; a terminal batch (every target quantile is r): the
    critics' quantiles close in on each row's reward, the loss falls."""
    config = algo.Config(hidden_sizes=(32, 32), critic="quantile", num_critics=3,
                         num_quantiles=5, quantiles_dropped=2, critic_lr=3e-3)  # fmt: skip
    state = algo.init(jax.random.key(0), 2, 1, config)
    assert jax.tree_util.tree_leaves(state.critic_params)[-1].shape[0] == 3  # N members
    b = batch().replace(discount=jnp.zeros(2))
    update = jax.jit(algo.update)
    losses = []
    for i in range(150):
        state, metrics = update(state, b, jax.random.key(i))
        losses.append(float(metrics["loss/critic"]))
    _, critic = algo._networks(state.config, 1)
    out = critic.apply(state.critic_params, b.obs, b.action)  # [N, B, M]
    assert out.shape == (3, 2, 5)
    np.testing.assert_allclose(out.mean(axis=(0, 2)), b.reward, atol=0.1)
    assert losses[-1] < 0.1 * losses[0]


@pytest.mark.parametrize(
    "values, message",
    [
        (dict(num_critics=0), "num_critics must be an integer >= 1"),
        (dict(num_quantiles=2, num_critics=2, quantiles_dropped=4), "leaves no target quantile"),
        (dict(quantiles_dropped=-1), "quantiles_dropped must be an integer >= 0"),
        (dict(replay="lap"), "replay lap takes the scalar critic"),
        (dict(clip_values=True), "clip_values takes the scalar critic"),
    ],
)
def test_bad_quantile_settings_are_refused(values, message):
    for algo in (td3, sac):
        if "clip_values" in values and algo is sac:
            continue
        with pytest.raises(ValueError, match=message):
            algo.Config(critic="quantile", **values)


LEARNER_FILES = [Path(td3.__file__), Path(sac.__file__)]


def test_each_recipe_is_defined_once_and_named_by_both_learners():
    """No recipe body in td3.py or sac.py: neither defines a target, a critic loss or a
    critic step, both reach the critic only through `critics`, and every recipe module
    defines the interface once."""
    for path in LEARNER_FILES:
        tree = ast.parse(path.read_text())
        defined = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        assert not defined & {"td_target", "critic_loss", "crossq_critic_loss", "_update_critic"}
        text = path.read_text()
        assert "critics.update(SIDE" in text and "critics.network(" in text
        names = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
        names |= {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        recipe_bodies = {"td_loss", "cross_entropy", "target_distribution", "quantile_huber",
                         "truncated", "mean_value", "support"}  # fmt: skip
        assert not names & recipe_bodies, path.name
    for recipe in critics.RECIPES:
        module = critics.MODULES[recipe]
        for name in ("check", "value", "train"):
            assert callable(getattr(module, name)), (recipe, name)
        assert isinstance(module.KEEPS_TARGETS, bool) and isinstance(module.TD_ERRORS, bool)
