import math
import re

import flax.linen
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jax_rl import networks


def test_log_prob_is_summed_over_action_dimensions_with_tanh_correction():
    mean = jnp.array([[0.3, -1.0, 2.0]])
    log_std = jnp.array([[-0.5, 0.2, 0.0]])
    key = jax.random.key(0)
    action, log_prob = networks.tanh_gaussian_sample(mean, log_std, key)
    u = np.asarray(mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape))
    per_dim = stats.norm.logpdf(u, np.asarray(mean), np.exp(np.asarray(log_std)))
    per_dim -= np.log(1.0 - np.tanh(u) ** 2)
    assert log_prob.shape == (1,)
    np.testing.assert_allclose(log_prob, per_dim.sum(axis=-1), rtol=1e-5)
    np.testing.assert_allclose(action, np.tanh(u), rtol=1e-6)


def test_squashed_density_integrates_to_one():
    """exp(log_prob) as a density of the squashed action a in (-1, 1)."""
    mean = 0.7
    a = np.linspace(-1 + 1e-6, 1 - 1e-6, 200_001, dtype=np.float64)
    u = np.arctanh(a)
    log_p = stats.norm.logpdf(u, mean, 0.8) - np.asarray(
        networks.log_det_tanh_jacobian(jnp.asarray(u, jnp.float32)[:, None]), np.float64
    )
    assert abs(np.trapezoid(np.exp(log_p), a) - 1.0) < 1e-3


def test_tanh_correction_stays_finite_for_saturated_actions():
    u = jnp.array([[30.0, -30.0, 0.0]])
    value = networks.log_det_tanh_jacobian(u)
    # 2 (log 2 - u - softplus(-2u)) per dimension: u = 30, -30 and 0.
    expected = 2 * (math.log(2) - 30) + 2 * (math.log(2) + 30 - 60) + 0.0
    assert np.isfinite(value).all()
    np.testing.assert_allclose(value, [expected], rtol=1e-5)


def test_ensemble_members_are_independent_networks():
    critic = networks.EnsembleCritic((16, 16), num_members=2)
    obs, action = jnp.ones((4, 3)), jnp.ones((4, 2))
    params = critic.init(jax.random.key(0), obs, action)
    q = critic.apply(params, obs, action)
    assert q.shape == (2, 4)
    assert not np.allclose(q[0], q[1])
    # Member 0 alone, through the single-critic module, gives the same values.
    single = networks.Critic((16, 16)).apply(networks.ensemble_member(params, 0), obs, action)
    np.testing.assert_allclose(single, q[0], rtol=1e-6)


def test_policies_act_in_unit_box():
    obs = 100.0 * jax.random.normal(jax.random.key(1), (64, 5))
    det = networks.DeterministicPolicy((8,), 3)
    actions = det.apply(det.init(jax.random.key(0), obs), obs)
    assert actions.shape == (64, 3) and float(jnp.abs(actions).max()) <= 1.0
    gauss = networks.GaussianPolicy((8,), 3)
    mean, log_std = gauss.apply(gauss.init(jax.random.key(0), obs), obs)
    assert float(log_std.min()) >= gauss.log_std_min and float(log_std.max()) <= gauss.log_std_max
    action, _ = networks.tanh_gaussian_sample(mean, log_std, jax.random.key(2))
    assert float(jnp.abs(action).max()) <= 1.0


def test_polyak_update_moves_target_by_tau():
    target = {"w": jnp.array([0.0, 10.0])}
    online = {"w": jnp.array([1.0, 0.0])}
    out = networks.polyak_update(target, online, 0.1)
    np.testing.assert_allclose(out["w"], [0.1, 9.0], rtol=1e-6)


def test_layernorm_input_layer_normalises_the_first_hidden_layer():
    """Linear -> LayerNorm -> tanh: with zero first-layer biases (Flax's init) the
    network cannot tell an observation from a positive multiple of it; the ReLU
    input layer can."""
    obs = jax.random.normal(jax.random.key(1), (8, 5))
    normed = networks.MLP((16, 16), 2, layer_init="lecun", input_layer="layernorm")
    params = normed.init(jax.random.key(0), obs)
    np.testing.assert_allclose(
        normed.apply(params, 1000.0 * obs), normed.apply(params, obs), rtol=1e-4, atol=1e-5
    )
    # The first hidden layer's features: per row, the pre-tanh values have zero
    # mean and unit variance, so the tanh outputs are centred and inside (-1, 1).
    _, inter = normed.apply(params, obs, capture_intermediates=True)
    pre_tanh = inter["intermediates"]["LayerNorm_0"]["__call__"][0]
    np.testing.assert_allclose(pre_tanh.mean(axis=-1), 0.0, atol=1e-5)
    np.testing.assert_allclose(pre_tanh.var(axis=-1), 1.0, rtol=1e-3)
    plain = networks.MLP((16, 16), 2, layer_init="lecun")
    plain_params = plain.init(jax.random.key(0), obs)
    assert not np.allclose(plain.apply(plain_params, 1000.0 * obs), plain.apply(plain_params, obs))


def test_unknown_input_layer_is_refused():
    mlp = networks.MLP((4,), 1, input_layer="batchnorm")
    with pytest.raises(ValueError, match="input_layer must be one of relu, layernorm"):
        mlp.init(jax.random.key(0), jnp.ones((1, 3)))


def test_layernorm_matches_flax_layernorm():
    """Our LayerNorm (means as matrix-vector products, for speed) computes what
    flax.linen.LayerNorm does, on inputs with a large common offset too."""
    x = 3.0 * jax.random.normal(jax.random.key(0), (4, 7, 32)) + 5.0
    ours, theirs = networks.LayerNorm(), flax.linen.LayerNorm()
    params = ours.init(jax.random.key(1), x)
    params = jax.tree_util.tree_map(
        lambda p: p + jax.random.normal(jax.random.key(2), p.shape), params
    )  # a trained-looking scale and bias, the same for both
    np.testing.assert_allclose(ours.apply(params, x), theirs.apply(params, x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("input_layer", networks.INPUT_LAYERS)
@pytest.mark.parametrize(
    ("hidden_sizes", "action_size"), [((32, 32), 1), ((16,), 3), ((8, 8, 8), 6), ((), 2)]
)
def test_critic_many_actions_matches_the_critic_on_tiled_states(
    input_layer, hidden_sizes, action_size
):
    """MPO's E-step evaluation (the state's part of the first layer once per state,
    LayerNorm statistics in closed form) gives the critic's own Q values."""
    n, b, obs_size = 5, 7, 4
    keys = jax.random.split(jax.random.key(0), 4)
    obs = 3.0 * jax.random.normal(keys[0], (b, obs_size)) + 2.0  # an offset, as real states have
    actions = jax.random.uniform(keys[1], (n, b, action_size), minval=-1.0, maxval=1.0)
    critic = networks.Critic(hidden_sizes, input_layer=input_layer)
    params = critic.init(keys[2], obs, actions[0])
    params = jax.tree_util.tree_map(  # a trained-looking LayerNorm scale and bias too
        lambda p: p + 0.3 * jax.random.normal(keys[3], p.shape), params
    )
    tiled = jnp.broadcast_to(obs[None], (n, b, obs_size))
    expected = critic.apply(params, tiled, actions)
    got = jax.jit(networks.critic_many_actions, static_argnums=0)(critic, params, obs, actions)
    assert got.shape == (n, b)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * float(jnp.abs(expected).max()))
    # Each action counts: permuting the actions of one state permutes its Q values.
    permuted = networks.critic_many_actions(critic, params, obs, actions[::-1])
    np.testing.assert_allclose(permuted, got[::-1], rtol=1e-5, atol=1e-5)


# --- Network families: SimBa and BatchRenorm ------------------------------------------


def test_layer_norm_rows_have_zero_mean_and_unit_variance():
    x = 5.0 + 3.0 * jax.random.normal(jax.random.key(0), (16, 12))
    norm = networks.LayerNorm()
    y = np.asarray(norm.apply(norm.init(jax.random.key(1), x), x), np.float64)
    np.testing.assert_allclose(y.mean(axis=-1), 0.0, atol=1e-5)
    np.testing.assert_allclose(y.var(axis=-1), 1.0, rtol=1e-4)


def test_simba_block_is_the_residual_computation_by_hand():
    """Width 2 (inner width 8): x + W2 relu(W1 LayerNorm(x) + b1) + b2."""
    block = networks.SimbaBlock()
    x = jnp.array([[1.0, 3.0], [-2.0, 0.5]])
    params = block.init(jax.random.key(0), x)
    rng = np.random.default_rng(0)
    w1, b1 = rng.normal(size=(2, 8)), rng.normal(size=8)
    w2, b2 = rng.normal(size=(8, 2)), rng.normal(size=2)
    scale, bias = np.array([1.5, 0.5]), np.array([0.1, -0.2])
    params = {
        "params": {
            "LayerNorm_0": {"scale": jnp.asarray(scale), "bias": jnp.asarray(bias)},
            "Dense_0": {"kernel": jnp.asarray(w1), "bias": jnp.asarray(b1)},
            "Dense_1": {"kernel": jnp.asarray(w2), "bias": jnp.asarray(b2)},
        }
    }
    xs = np.asarray(x, np.float64)
    # Two features: mean (a + b) / 2, variance ((a - b) / 2)^2, so LayerNorm gives +-1.
    mean = xs.mean(axis=1, keepdims=True)
    normed = (xs - mean) / np.sqrt(((xs - mean) ** 2).mean(axis=1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(np.abs(normed), 1.0, rtol=1e-5)
    expected = xs + np.maximum((normed * scale + bias) @ w1 + b1, 0.0) @ w2 + b2
    np.testing.assert_allclose(block.apply(params, x), expected, rtol=1e-5)


def test_simba_network_layout_and_shapes():
    net = networks.Simba(width=16, blocks=3, output_size=4)
    x = jnp.ones((5, 7))
    params = net.init(jax.random.key(0), x)["params"]
    assert net.apply({"params": params}, x).shape == (5, 4)
    assert [k for k in params if k.startswith("SimbaBlock")] == [
        f"SimbaBlock_{i}" for i in range(3)
    ]
    assert params["Dense_0"]["kernel"].shape == (7, 16)  # the embedding
    assert params["SimbaBlock_0"]["Dense_0"]["kernel"].shape == (16, 64)  # 4x expansion
    assert params["Dense_1"]["kernel"].shape == (16, 4)  # the head, after the final LayerNorm
    assert "LayerNorm_0" in params


def test_orthogonal_init_is_flaxs_one_matrix_at_a_time_under_vmap():
    """The same values as Flax's initialiser, batched by two vmaps (an ensemble in a
    population), with orthonormal columns; under vmap the QRs run one matrix at a time."""
    keys = jax.random.split(jax.random.key(3), 6).reshape(2, 3)
    ours = jax.jit(jax.vmap(jax.vmap(lambda k: networks.orthogonal()(k, (5, 4)))))(keys)
    flax_init = flax.linen.initializers.orthogonal(1.0)
    theirs = jax.vmap(jax.vmap(lambda k: flax_init(k, (5, 4))))(keys)
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_allclose(ours[1, 2].T @ ours[1, 2], np.eye(4), atol=1e-6)
    assert not np.allclose(ours[0, 0], ours[0, 1])  # each matrix from its own key
    jaxpr = str(jax.make_jaxpr(jax.vmap(lambda k: networks.orthogonal()(k, (5, 4))))(keys[0]))
    shapes = re.findall(r"\w+:(f32\[[\d,]*\]) \w+:f32\[[\d,]*\] = qr\[", jaxpr)
    assert shapes == ["f32[5,4]"], jaxpr  # one QR, of one matrix (in a loop over the batch)


def unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def test_simbav2_block_interpolates_on_the_sphere_by_hand():
    """Width 2 (inner 8), one block of two: normalize(h + alpha (normalize(W2 relu(s W1 h))
    - h)) with the scalers' stored values turned into their effective ones."""
    block = networks.SimbaV2Block(blocks=2)
    h = jnp.asarray(unit(np.array([[3.0, 4.0], [-1.0, 0.5]])))
    rng = np.random.default_rng(0)
    w1, w2 = rng.normal(size=(2, 8)), rng.normal(size=(8, 2))
    s_stored, a_stored = rng.uniform(0.1, 1.0, 8), rng.uniform(0.1, 1.0, 2)
    params = {
        "params": {
            "HyperDense_0": {"kernel": jnp.asarray(w1)},
            "HyperDense_1": {"kernel": jnp.asarray(w2)},
            "Scaler_0": {"scaler": jnp.asarray(s_stored)},
            "Scaler_1": {"scaler": jnp.asarray(a_stored)},
        }
    }
    # Scaler 0 starts at sqrt(2/8) stored as sqrt(2/8): factor 1. Scaler 1 (alpha) starts at
    # 1/3 stored as 1/sqrt(2): factor sqrt(2)/3.
    s, alpha = s_stored, a_stored * np.sqrt(2.0) / 3.0
    hs = np.asarray(h, np.float64)
    inner = unit((np.maximum(s * (hs @ w1), 0.0) + 1e-8) @ w2)  # + 1e-8: never all zero
    expected = unit(hs + alpha * (inner - hs))
    out = block.apply(params, h)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), 1.0, rtol=1e-6)


def test_simbav2_network_layout_input_shift_and_projection():
    net = networks.SimbaV2(width=16, blocks=2, output_size=3)
    x = jnp.zeros((1, 5))
    params = net.init(jax.random.key(0), x)
    inner = params["params"]
    assert inner["HyperDense_0"]["kernel"].shape == (6, 16)  # the input and the constant 3
    assert inner["SimbaV2Block_1"]["HyperDense_0"]["kernel"].shape == (16, 64)  # 4x
    assert inner["HyperDense_2"]["kernel"].shape == (16, 3)  # the head's last layer
    for path, leaf in jax.tree_util.tree_leaves_with_path(params):
        if "HyperDense" in jax.tree_util.keystr(path):  # unit-norm columns from the start
            np.testing.assert_allclose(np.linalg.norm(leaf, axis=0), 1.0, rtol=1e-5)
    # Without blocks, by hand: a zero input becomes [0, ..., 0, 1] on the sphere, so the
    # embedding is the kernel's last row (the constant's weights), scaled, normalised; the
    # head scales its first layer (a scaler's factor is 1 where start = stored).
    bare = networks.SimbaV2(width=16, blocks=0, output_size=3)
    v = bare.init(jax.random.key(2), x)["params"]
    v["bias"] = jnp.arange(3.0)
    w = {
        k: np.asarray(v[k]["kernel"], np.float64)
        for k in ("HyperDense_0", "HyperDense_1", "HyperDense_2")
    }
    s0, s1 = np.asarray(v["Scaler_0"]["scaler"]), np.asarray(v["Scaler_1"]["scaler"])
    embedding = unit(w["HyperDense_0"][-1] * s0)
    expected = (s1 * (embedding @ w["HyperDense_1"])) @ w["HyperDense_2"] + np.arange(3.0)
    np.testing.assert_allclose(bare.apply({"params": v}, x)[0], expected, rtol=1e-5, atol=1e-6)
    doubled = jax.tree_util.tree_map(lambda v: 2.0 * v, params)
    projected = networks.project(doubled)
    for path, leaf in jax.tree_util.tree_leaves_with_path(projected):
        name = jax.tree_util.keystr(path)
        if "HyperDense" in name:
            np.testing.assert_allclose(np.linalg.norm(leaf, axis=0), 1.0, rtol=1e-5)
        else:  # scalers and the bias are left as they are
            np.testing.assert_array_equal(leaf, 2.0 * _leaf(params, path))
    mlp = networks.MLP((4,), 2).init(jax.random.key(1), x)
    assert jax.tree_util.tree_all(
        jax.tree_util.tree_map(lambda a, b: bool((a == b).all()), networks.project(mlp), mlp)
    )


def _leaf(tree, path):
    for key in path:
        tree = tree[key.key]
    return tree


def brn_variables(mean, var, steps, scale=(1.0, 1.0), bias=(0.0, 0.0)):
    return {
        "params": {"scale": jnp.asarray(scale), "bias": jnp.asarray(bias)},
        "batch_stats": {
            "mean": jnp.asarray(mean, jnp.float32),
            "var": jnp.asarray(var, jnp.float32),
            "steps": jnp.int32(steps),
        },
    }


X_BRN = np.array([[1.0, 10.0], [3.0, 10.5], [2.0, 9.0], [6.0, 12.5]])


def test_batch_renorm_training_step_by_hand_with_r_and_d_clipped():
    """Feature 0: running std far below the batch's (r clips at r_max 3) and running mean
    far below (d clips at d_max 5); feature 1: neither clips."""
    renorm = networks.Renorm(momentum=0.9, warmup_steps=0, train=True)
    layer = networks.BatchRenorm(renorm)
    mean, var = np.array([-100.0, 10.0]), np.array([0.01, 2.0])
    scale, bias = np.array([2.0, 0.5]), np.array([0.3, -1.0])
    variables = brn_variables(mean, var, steps=7, scale=scale, bias=bias)
    y, updated = layer.apply(variables, jnp.asarray(X_BRN), mutable=["batch_stats"])
    eps = 1e-3
    mu_b, var_b = X_BRN.mean(axis=0), X_BRN.var(axis=0)
    sigma_b, sigma = np.sqrt(var_b + eps), np.sqrt(var + eps)
    r_raw, d_raw = sigma_b / sigma, (mu_b - mean) / sigma
    r, d = np.clip(r_raw, 1 / 3, 3), np.clip(d_raw, -5, 5)
    expected = ((X_BRN - mu_b) / sigma_b * r + d) * scale + bias
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)
    # The layer clips: feature 0 differs from the unclipped formula, feature 1 equals it.
    unclipped = ((X_BRN - mu_b) / sigma_b * r_raw + d_raw) * scale + bias
    assert np.abs(np.asarray(y)[:, 0] - unclipped[:, 0]).max() > 1.0
    np.testing.assert_allclose(np.asarray(y)[:, 1], unclipped[:, 1], rtol=1e-5, atol=1e-5)
    stats_after = updated["batch_stats"]
    np.testing.assert_allclose(stats_after["mean"], 0.9 * mean + 0.1 * mu_b, rtol=1e-6)
    np.testing.assert_allclose(stats_after["var"], 0.9 * var + 0.1 * var_b, rtol=1e-5)
    assert int(stats_after["steps"]) == 8


def test_batch_renorm_is_batch_norm_during_warmup_and_uses_running_statistics_to_evaluate():
    mean, var = np.array([-100.0, 10.0]), np.array([0.01, 2.0])
    variables = brn_variables(mean, var, steps=3)
    warming = networks.BatchRenorm(networks.Renorm(warmup_steps=4, train=True))
    y, _ = warming.apply(variables, jnp.asarray(X_BRN), mutable=["batch_stats"])
    bn = (X_BRN - X_BRN.mean(axis=0)) / np.sqrt(X_BRN.var(axis=0) + 1e-3)
    np.testing.assert_allclose(y, bn, rtol=1e-5, atol=1e-5)
    evaluating = networks.BatchRenorm(networks.Renorm(train=False))
    y = evaluating.apply(variables, jnp.asarray(X_BRN))
    np.testing.assert_allclose(y, (X_BRN - mean) / np.sqrt(var + 1e-3), rtol=1e-5)
    _, unchanged = evaluating.apply(variables, jnp.asarray(X_BRN), mutable=["batch_stats"])
    for name in ("mean", "var", "steps"):  # evaluation never writes the statistics
        np.testing.assert_array_equal(
            unchanged["batch_stats"][name], variables["batch_stats"][name]
        )
