import math
import re
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

from jax_rl import algos
from jax_rl.algos import mpo
from jax_rl.core.transition import Transition

from .hand_networks import ACTION_SIZE, OBS_SIZE, critic_params

EPS = 0.1


def q_matrices():
    """Random Q [B, N] at several scales, including very peaked ones."""
    key = jax.random.key(0)
    out = []
    for i, scale in enumerate([1e-2, 1.0, 30.0, 1e3]):
        out.append(scale * jax.random.normal(jax.random.fold_in(key, i), (64, 20)))
    peaked = jnp.zeros((64, 20)).at[:, 3].set(50.0)  # one sample far above the rest
    out.append(peaked + 0.01 * jax.random.normal(key, (64, 20)))
    return out


@pytest.mark.parametrize("index", range(5))
def test_scipy_and_newton_agree_on_eta_and_the_dual(index):
    q = q_matrices()[index]
    eps = jnp.float32(EPS)
    for start in (1.0, 100.0):
        eta_scipy = mpo.solve_temperature_scipy(q, jnp.float32(start), eps)
        eta_newton = mpo.solve_temperature_newton(q, jnp.float32(start), eps)
        np.testing.assert_allclose(eta_newton, eta_scipy, rtol=1e-4)
        g_scipy = mpo.temperature_dual(eta_scipy, q, eps)
        g_newton = mpo.temperature_dual(eta_newton, q, eps)
        np.testing.assert_allclose(g_newton, g_scipy, rtol=1e-4)
    # It is the minimum: nudging eta either way does not lower the dual.
    for factor in (0.99, 1.01):
        assert float(mpo.temperature_dual(eta_newton * factor, q, eps)) >= float(
            g_newton
        ) - 1e-5 * abs(float(g_newton))


def test_identical_samples_put_eta_at_its_bound():
    q = jnp.ones((8, 20))
    newton = mpo.solve_temperature_newton(q, jnp.float32(1.0), jnp.float32(EPS))
    assert float(newton) == pytest.approx(mpo.MIN_TEMPERATURE, rel=1e-6)
    assert float(
        mpo.solve_temperature_scipy(q, jnp.float32(1.0), jnp.float32(EPS))
    ) == pytest.approx(mpo.MIN_TEMPERATURE, abs=1e-5)


def test_dual_gradient_matches_finite_differences():
    q = np.asarray(q_matrices()[1], np.float64)

    def g(eta):  # float64 reference of the same formula
        z = q / eta
        m = z.max(axis=1, keepdims=True)
        lme = (m[:, 0] + np.log(np.exp(z - m).sum(axis=1))) - math.log(q.shape[1])
        return eta * EPS + eta * lme.mean()

    for eta in (0.3, 1.0, 5.0):
        _, grad = mpo._dual_value_and_grad(
            jnp.float32(eta), jnp.asarray(q, jnp.float32), jnp.float32(EPS)
        )
        h = 1e-5 * eta
        numeric = (g(eta + h) - g(eta - h)) / (2 * h)
        np.testing.assert_allclose(grad, numeric, rtol=1e-3)


def numeric_kl(mp, sp, mq, sq):
    p, q = stats.norm(mp, sp), stats.norm(mq, sq)
    value, _ = integrate.quad(
        lambda x: p.pdf(x) * (p.logpdf(x) - q.logpdf(x)), mp - 12 * sp, mp + 12 * sp
    )
    return value


def test_kl_matches_closed_form_for_means_and_for_standard_deviations():
    # Means only: (mu_p - mu_q)^2 / (2 sigma^2).
    kl = mpo.gaussian_kl(jnp.array(0.3), jnp.array(0.5), jnp.array(-0.1), jnp.array(0.5))
    np.testing.assert_allclose(kl, 0.4**2 / (2 * 0.25), rtol=1e-5)
    np.testing.assert_allclose(kl, numeric_kl(0.3, 0.5, -0.1, 0.5), rtol=1e-4)
    # Standard deviations only: log(s_q/s_p) + s_p^2 / (2 s_q^2) - 1/2, with stds, not variances.
    kl = mpo.gaussian_kl(jnp.array(0.0), jnp.array(0.4), jnp.array(0.0), jnp.array(1.3))
    np.testing.assert_allclose(kl, math.log(1.3 / 0.4) + 0.16 / (2 * 1.69) - 0.5, rtol=1e-5)
    np.testing.assert_allclose(kl, numeric_kl(0.0, 0.4, 0.0, 1.3), rtol=1e-4)


def hand_state(**config) -> mpo.State:
    """Critics Q(s, a) = 3 (a + 2): higher actions are better."""
    config = {"hidden_sizes": (1,), **config}
    state = mpo.init(jax.random.key(0), OBS_SIZE, ACTION_SIZE, mpo.Config(**config))
    single = jax.tree_util.tree_map(
        lambda x: x[0], critic_params([3.0], [0.0])["params"]["members"]
    )
    return state.replace(critic_params={"params": single}, target_critic_params={"params": single})


def test_weighted_likelihood_moves_the_policy_toward_high_q_actions():
    state = hand_state(epsilon_mean=1.0, actor_lr=1e-2)
    obs = jax.random.normal(jax.random.key(1), (64, OBS_SIZE))
    before = float(mpo.act(state, obs, jax.random.key(0), deterministic=True).mean())
    step = jax.jit(mpo._update_policy)
    for i in range(30):
        state, metrics = step(state, obs, jax.random.key(i))
    after = float(mpo.act(state, obs, jax.random.key(0), deterministic=True).mean())
    assert after > before + 0.1, (before, after)


def test_action_penalty_weights_favour_samples_inside_the_box():
    # u [N=4, B=1, A=2]: the penalty is -sum of squared distances to [-1, 1].
    u = jnp.array([[[0.5, -0.2]], [[1.5, 0.0]], [[-3.0, 2.0]], [[0.9, -1.0]]])
    penalty = mpo.action_penalty(u)
    np.testing.assert_allclose(penalty, [[0.0, -0.25, -5.0, 0.0]], rtol=1e-6)
    # Its E-step: weights v = softmax(P / eta_p) whose KL from uniform is epsilon_penalty
    # (the dual's constraint is active), more of the mass on the samples inside.
    rows = jax.random.uniform(jax.random.key(0), (32, 20, 1), minval=-2.0, maxval=2.0)
    penalty = mpo.action_penalty(jnp.swapaxes(rows, 0, 1))  # [B, N]
    eps = 1e-3
    eta = mpo.solve_temperature_newton(penalty, jnp.float32(1.0), jnp.float32(eps))
    v = np.asarray(jax.nn.softmax(penalty / eta, axis=1), np.float64)
    kl = (v * np.log(v * v.shape[1])).sum(axis=1).mean()
    np.testing.assert_allclose(kl, eps, rtol=0.05)
    inside = np.asarray(penalty) == 0.0
    assert (v * inside).sum() / v.shape[0] > inside.mean()


def test_kl_multipliers_grow_when_the_constraint_is_violated():
    alpha = {"mean": jnp.zeros(2), "std": jnp.zeros(2)}
    config = mpo.Config()
    kl = {"kl_mean": jnp.array([1.0, 0.0]), "kl_std": jnp.array([0.0, 1.0])}
    grads = jax.grad(mpo.alpha_loss)(alpha, kl, config)
    # Gradient descent raises alpha where KL > epsilon, lowers it where KL < epsilon.
    assert float(grads["mean"][0]) < 0 < float(grads["mean"][1])
    assert float(grads["std"][1]) < 0 < float(grads["std"][0])


def batch() -> Transition:
    key = jax.random.key(3)
    return Transition(
        obs=jax.random.normal(key, (32, OBS_SIZE)),
        action=jax.random.uniform(key, (32, ACTION_SIZE), minval=-1, maxval=1),
        reward=jnp.ones(32),
        discount=jnp.ones(32),
        next_obs=jax.random.normal(jax.random.fold_in(key, 1), (32, OBS_SIZE)),
    )


@pytest.mark.parametrize("solver", mpo.DUAL_SOLVERS)
def test_update_compiles_once_and_runs_inside_scan(solver):
    state = mpo.init(
        jax.random.key(0),
        OBS_SIZE,
        ACTION_SIZE,
        mpo.Config(hidden_sizes=(16,), num_samples=8, dual_solver=solver),
    )
    update = jax.jit(mpo.update)
    state, metrics = update(state, batch(), jax.random.key(0))
    compiled = update._cache_size()  # the cache is shared with other tests' configs
    for i in range(1, 3):
        state, metrics = update(state, batch(), jax.random.key(i))
    assert update._cache_size() == compiled
    assert all(np.isfinite(float(v)) for v in metrics.values())

    def body(state, key):
        return mpo.update(state, batch(), key)

    scanned, stacked = jax.jit(
        lambda s: jax.lax.scan(body, s, jax.random.split(jax.random.key(9), 4))
    )(state)
    assert stacked["dual/temperature"].shape == (4,)
    assert int(scanned.step) == 7


def test_scipy_and_newton_updates_give_the_same_state():
    config = dict(hidden_sizes=(16,), num_samples=8)
    a = mpo.init(
        jax.random.key(0), OBS_SIZE, ACTION_SIZE, mpo.Config(dual_solver="scipy", **config)
    )
    b = a.replace(config=a.config.replace(dual_solver="newton"))
    a, ma = jax.jit(mpo.update)(a, batch(), jax.random.key(1))
    b, mb = jax.jit(mpo.update)(b, batch(), jax.random.key(1))
    np.testing.assert_allclose(ma["dual/temperature"], mb["dual/temperature"], rtol=1e-4)
    np.testing.assert_allclose(ma["loss/policy"], mb["loss/policy"], rtol=1e-3)


def test_policy_std_metric_is_the_target_policys_std_at_the_batch():
    config = mpo.Config(hidden_sizes=(16,), num_samples=8, dual_solver="newton")
    state = mpo.init(jax.random.key(0), OBS_SIZE, ACTION_SIZE, config)
    actor, _ = mpo._networks(state)
    _, log_std = actor.apply(state.target_actor_params, batch().obs)
    _, metrics = jax.jit(mpo.update)(state, batch(), jax.random.key(1))
    np.testing.assert_allclose(metrics["policy/std"], np.exp(log_std).mean(), rtol=1e-6)
    assert 1e-4 <= float(metrics["policy/std"]) <= 1.0


def test_layernorm_input_layer_is_built_and_trained_in_actor_and_critic():
    config = mpo.Config(hidden_sizes=(16, 16), num_samples=8, input_layer="layernorm")
    state = mpo.init(jax.random.key(0), OBS_SIZE, ACTION_SIZE, config)
    new, metrics = jax.jit(mpo.update)(state, batch(), jax.random.key(1))
    assert all(np.isfinite(float(v)) for v in metrics.values())
    for name in ("actor_params", "critic_params"):
        before = getattr(state, name)["params"]["MLP_0"]["LayerNorm_0"]["scale"]
        after = getattr(new, name)["params"]["MLP_0"]["LayerNorm_0"]["scale"]
        np.testing.assert_array_equal(before, 1.0)  # LayerNorm starts as the identity
        assert not np.allclose(after, before)  # and is learned with the rest


def _first_leaf(params) -> np.ndarray:
    return np.asarray(jax.tree_util.tree_leaves(params)[0])


def test_periodic_targets_are_copies_refreshed_every_period_updates():
    config = mpo.Config(hidden_sizes=(16,), num_samples=8, dual_solver="newton")
    state = mpo.init(
        jax.random.key(0), OBS_SIZE, ACTION_SIZE, config.replace(target_update_period=3)
    )
    update = jax.jit(mpo.update)
    first = {
        k: _first_leaf(getattr(state, k)) for k in ("target_actor_params", "target_critic_params")
    }
    for i in range(1, 7):
        state, _ = update(state, batch(), jax.random.key(i))
        for target, online in (
            ("target_actor_params", "actor_params"),
            ("target_critic_params", "critic_params"),
        ):
            now = _first_leaf(getattr(state, target))
            if i % 3 == 0:  # refreshed: equal to the online parameters after this update
                np.testing.assert_array_equal(now, _first_leaf(getattr(state, online)))
                first[target] = now
            else:  # held: unchanged since the last refresh, while the online ones move
                np.testing.assert_array_equal(now, first[target])
                assert not np.allclose(now, _first_leaf(getattr(state, online)))
    # Period 0 is Polyak averaging: after one update target = (1 - tau) old + tau online.
    polyak = mpo.init(jax.random.key(0), OBS_SIZE, ACTION_SIZE, config)
    old = _first_leaf(polyak.target_critic_params)
    polyak, _ = update(polyak, batch(), jax.random.key(1))
    tau = config.tau
    np.testing.assert_allclose(
        _first_leaf(polyak.target_critic_params),
        (1 - tau) * old + tau * _first_leaf(polyak.critic_params),
        rtol=1e-5,
        atol=1e-7,
    )


def test_acting_squashes_like_the_critic_sees():
    """The agent acts with clip(u), and the critic scores exactly clip(u) of the samples."""
    state = mpo.init(jax.random.key(0), OBS_SIZE, ACTION_SIZE, mpo.Config(hidden_sizes=(8,)))
    obs = 10.0 * jax.random.normal(jax.random.key(1), (512, OBS_SIZE))
    actor, critic = mpo._networks(state)
    mean, log_std = actor.apply(state.actor_params, obs)
    assert float(jnp.abs(mean).max()) <= 1.0 and float(jnp.exp(log_std).max()) <= 1.0
    np.testing.assert_allclose(mpo.act(state, obs, jax.random.key(2), True), mean)
    key = jax.random.key(3)
    sampled = mpo.act(state, obs, key, deterministic=False)
    raw = mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape)
    assert float(jnp.abs(raw).max()) > 1.0  # some samples leave the box...
    np.testing.assert_allclose(sampled, jnp.clip(raw, -1.0, 1.0), rtol=1e-6)  # ...and are clipped
    u, _, _, q = mpo.sample_target_actions(state, obs, key)
    for n in (0, 7):
        expected = critic.apply(state.target_critic_params, obs, jnp.clip(u[n], -1.0, 1.0))
        np.testing.assert_allclose(q[:, n], expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("dual_solver", "bfgs", "dual_solver must be one of scipy, newton, adam"),
        ("epsilon", 0.0, "epsilon must be > 0"),
        ("num_samples", 0, "num_samples must be a positive integer"),
        ("target_update_period", -1, "target_update_period must be >= 0"),
        ("target_update_period", 2.5, "target_update_period must be an integer"),
        ("input_layer", "batchnorm", "input_layer must be one of relu, layernorm"),
    ],
)
def test_config_rejects_bad_values(field, value, message):
    with pytest.raises(ValueError, match=message):
        mpo.Config(**{field: value})


def test_scipy_solver_without_a_cpu_backend_is_a_clear_error(monkeypatch):
    # As under JAX_PLATFORMS=cuda: pure_callback would fail deep inside the first update.
    devices = jax.devices

    def no_cpu(backend=None):
        if backend == "cpu":
            raise RuntimeError("Unknown backend cpu")
        return devices(backend)

    monkeypatch.setattr(jax, "devices", no_cpu)
    with pytest.raises(ValueError, match="JAX_PLATFORMS=cuda,cpu"):
        mpo.check_platform(mpo.Config())
    mpo.check_platform(mpo.Config(dual_solver="newton"))  # in-graph: no host needed


def _walker_sized_update_inputs():
    """The dm_control preset's MPO at walker-walk's sizes (O 24, A 6, 256 hidden units):
    the shape at which XLA's default CPU fusion of the E-step's critic was slow."""
    config = mpo.Config(num_samples=8, input_layer="layernorm")
    state = mpo.init(jax.random.key(0), 24, 6, config)
    key = jax.random.key(3)
    data = Transition(
        obs=jax.random.normal(key, (16, 24)),
        action=jax.random.uniform(key, (16, 6), minval=-1, maxval=1),
        reward=jnp.ones(16),
        discount=jnp.ones(16),
        next_obs=jax.random.normal(jax.random.fold_in(key, 1), (16, 24)),
    )
    return state, data, jax.random.key(1)


def _ynn_fusion_ops(compiled_text: str) -> set[str]:
    """The kinds of instruction inside the compiled module's YNN library fusions."""
    bodies = dict(re.findall(r"\n(%\S+) [^\n]*\{\n(.*?)\n\}", compiled_text, re.S))
    called = re.findall(r"ynn_fusion[.\w]* = .*?calls=(%[\w.\-]+)", compiled_text)
    return {op for name in called for op in re.findall(r" (\w+)\(", bodies[name])}


def test_on_a_cpu_mpo_compiles_its_update_with_matrix_products_alone_in_ynn():
    assert jax.default_backend() == "cpu"
    assert algos.compiler_options(mpo) == mpo.CPU_COMPILER_OPTIONS
    assert algos.compiler_options(algos.sac) is None
    assert algos.compiler_options(algos.td3) is None
    state, data, key = _walker_sized_update_inputs()
    options = algos.compiler_options(mpo)
    default = jax.jit(mpo.update).lower(state, data, key).compile().as_text()
    tuned = jax.jit(mpo.update, compiler_options=options).lower(state, data, key).compile()
    # XLA's defaults give YNN reductions and elementwise work beside the products;
    # with the options it gets the matrix products alone.
    assert {"dot", "reduce", "multiply"} <= _ynn_fusion_ops(default)
    assert _ynn_fusion_ops(tuned.as_text()) == {"dot", "parameter"}
    # Only the speed changes: the same update up to float rounding.
    a = jax.jit(mpo.update)(state, data, key)
    b = jax.jit(mpo.update, compiler_options=options)(state, data, key)
    leaves_a, leaves_b = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    for x, y in zip(leaves_a, leaves_b, strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-4, atol=1e-6)


def test_compiler_options_this_xla_refuses_fall_back_to_its_defaults():
    learner = types.SimpleNamespace(CPU_COMPILER_OPTIONS={"xla_cpu_no_such_option": "1"})
    assert algos.compiler_options(learner) is None
