"""DR.Q's options of MR.Q's representation (`jax_rl.algos.mrq`: infonce_weight,
infonce_temperature, value_scaling) and `--preset drq`."""

import json

import fingerprints
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_rl.algos import mrq, td3
from jax_rl.core.replay import Window
from jax_rl.run import presets

from .test_mrq import TINY  # MR.Q's tiny learner: the same one its tests train


def _infonce_by_hand(prediction, target, tau):
    """Per-row InfoNCE [B] in float64, from the formula."""
    p = np.asarray(prediction, np.float64)
    t = np.asarray(target, np.float64)
    p = p / np.linalg.norm(p, axis=1, keepdims=True)
    t = t / np.linalg.norm(t, axis=1, keepdims=True)
    logits = p @ t.T / tau  # [B, B]: row b's prediction against every target
    top = logits.max(axis=1, keepdims=True)
    log_p = logits - top - np.log(np.exp(logits - top).sum(axis=1, keepdims=True))
    return -np.diagonal(log_p)  # the true target of row b is target b


def test_infonce_on_a_hand_made_batch_of_three():
    prediction = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]], np.float32)
    target = np.array([[2.0, 0.0], [1.0, 1.0], [0.0, -1.0]], np.float32)
    got = np.asarray(mrq.infonce(jnp.asarray(prediction), jnp.asarray(target), 0.1))
    # Row 0 by hand: n(p_0) = [1, 0]; n(targets) = [1, 0], [1, 1]/sqrt2, [0, -1]; its logits
    # are [1, 1/sqrt2, 0] / 0.1 and the loss is -log softmax's first entry.
    row0 = np.array([1.0, 1.0 / np.sqrt(2.0), 0.0]) / 0.1
    assert got[0] == pytest.approx(np.log(np.exp(row0).sum()) - row0[0], rel=1e-5)
    np.testing.assert_allclose(got, _infonce_by_hand(prediction, target, 0.1), rtol=1e-5)
    # One direction: each prediction picks its target, so swapping the two changes the loss.
    swapped = np.asarray(mrq.infonce(jnp.asarray(target), jnp.asarray(prediction), 0.1))
    assert not np.allclose(swapped, got)
    # The temperature divides the logits.
    hot = np.asarray(mrq.infonce(jnp.asarray(prediction), jnp.asarray(target), 2.0))
    np.testing.assert_allclose(hot, _infonce_by_hand(prediction, target, 2.0), rtol=1e-5)


def test_infonce_in_the_encoder_loss_is_masked_per_row_with_fixed_targets():
    config = td3.Config(**{**TINY, "embedding_size": 4, "encoder_horizon": 2})
    config = config.replace(infonce_weight=0.5, infonce_temperature=0.2)
    k_params, k_target, k_obs, k_next, k_action = jax.random.split(jax.random.key(3), 5)
    params = mrq.init_params(k_params, 3, 1, (8,), config)
    target = mrq.init_params(k_target, 3, 1, (8,), config)
    mask = np.array([[1.0, 1.0], [1.0, 0.0], [1.0, 1.0]], np.float32)  # row 1 ends at step 0
    window = Window(
        obs=jax.random.normal(k_obs, (3, 2, 3)),
        action=jax.random.uniform(k_action, (3, 2, 1), minval=-1.0, maxval=1.0),
        reward=jnp.zeros((3, 2)),
        discount=jnp.ones((3, 2)),
        next_obs=jax.random.normal(k_next, (3, 2, 3)),
        mask=jnp.asarray(mask),
    )
    # The latent model's unroll (MR.Q's own pieces), then the term by hand on it.
    zs = mrq.state_embedding(params, window.obs[:, 0])
    want, quirk = 0.0, 0.0
    for i in range(2):
        _, zs, _ = mrq.predict(params, mrq.state_action_embedding(params, zs, window.action[:, i]))
        nce = _infonce_by_hand(zs, mrq.state_embedding(target, window.next_obs[:, i]), 0.2)
        want += (mask[:, i] * nce).mean()
        quirk += nce.mean() * mask[:, i].mean()  # DR.Q code's broadcast [B] * [B, 1]
    got = jax.jit(mrq.losses, static_argnums=3)(params, target, window, config)
    assert float(got.infonce) == pytest.approx(want, rel=1e-4)
    assert abs(want - quirk) > 1e-3  # the example tells the two maskings apart
    total, parts = jax.jit(mrq.loss, static_argnums=3)(params, target, window, config)
    assert parts.shape == (4,)
    assert float(parts[3]) == pytest.approx(want, rel=1e-4)
    mrq_part = float(got.dynamics) + 0.1 * float(got.reward) + 0.1 * float(got.done)
    assert float(total) == pytest.approx(mrq_part + 0.5 * want, rel=1e-4)
    # The targets are fixed: no gradient reaches the target copy.
    grads = jax.grad(lambda t: mrq.loss(params, t, window, config)[0])(target)
    assert all(float(jnp.abs(g).max()) == 0.0 for g in jax.tree_util.tree_leaves(grads))


def _window_batch(key, rows=8, horizon=5, obs_size=3):
    k_obs, k_next, k_action, k_reward = jax.random.split(key, 4)
    return Window(
        obs=jax.random.normal(k_obs, (rows, horizon, obs_size)),
        action=jax.random.uniform(k_action, (rows, horizon, 1), minval=-1.0, maxval=1.0),
        reward=jax.random.normal(k_reward, (rows, horizon)),
        discount=jnp.ones((rows, horizon)),
        next_obs=jax.random.normal(k_next, (rows, horizon, obs_size)),
        mask=jnp.ones((rows, horizon)),
    )


def test_a_zero_weight_leaves_the_update_mrqs_bit_for_bit():
    mrq_config = td3.Config(**TINY)
    off = td3.Config(**TINY, infonce_weight=0.0, infonce_temperature=3.0)
    on = td3.Config(**TINY, infonce_weight=0.1)
    batch, key = _window_batch(jax.random.key(0)), jax.random.key(1)

    def one_update(config):
        state = td3.init(jax.random.key(2), 3, 1, config)
        return state, jax.jit(td3.update)(state, batch, key)

    state, (mrq_state, mrq_metrics) = one_update(mrq_config)
    _, (off_state, off_metrics) = one_update(off)
    _, (on_state, on_metrics) = one_update(on)
    leaves = lambda tree: [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]  # noqa: E731
    for a, b in zip(
        leaves((mrq_state, mrq_metrics)), leaves((off_state, off_metrics)), strict=True
    ):
        np.testing.assert_array_equal(a, b)
    assert "loss/encoder_infonce" not in off_metrics and off_state.encoders.losses.shape == (3,)

    # The temperature of a term that is off never reaches the program.
    def text(config):
        state = td3.init(jax.random.key(2), 3, 1, config)
        return jax.jit(td3.update).lower(state, batch, key).as_text()

    assert text(off) == text(mrq_config)
    # On, the term is there and the encoders move otherwise.
    assert float(on_metrics["loss/encoder_infonce"]) > 0
    assert on_state.encoders.losses.shape == (4,)
    assert not np.array_equal(
        np.asarray(on_state.encoders.params.state[0]["kernel"]),
        np.asarray(off_state.encoders.params.state[0]["kernel"]),
    )


def test_a_zero_weight_ends_as_mrqs_recorded_fingerprint():
    # The record was made before DR.Q's options existed: MR.Q's program as it was.
    record = json.loads(fingerprints.RECORD.read_text())
    recorded = record["cases"]["TD3 part mrq"]
    config = dict(fingerprints.cases("TD3"))["part mrq"]
    found = fingerprints.run("TD3", config.replace(infonce_weight=0.0, infonce_temperature=0.5))
    if recorded.get("processor", record["processor"]) == fingerprints.processor():
        assert found["sha256"] == recorded["sha256"]
    else:
        assert found["sum"] == pytest.approx(recorded["sum"], rel=1e-4)
    changed = fingerprints.run("TD3", config.replace(infonce_weight=0.1))
    assert changed["sha256"] != recorded["sha256"]


def test_without_value_scaling_the_targets_are_in_raw_reward_units():
    raw = td3.Config(**TINY, value_horizon=3, value_scaling=False).replace(discount=0.5)
    scaled = raw.replace(value_scaling=True)
    model = mrq.init(jax.random.key(0), 2, 1, raw).replace(
        scale=jnp.float32(2.0), target_scale=jnp.float32(4.0)
    )
    window = Window(
        obs=jnp.zeros((2, 3, 2)),
        action=jnp.zeros((2, 3, 1)),
        reward=jnp.array([[1.0, 2.0, 4.0], [1.0, 2.0, 4.0]]),
        discount=jnp.array([[1.0, 1.0, 1.0], [1.0, 0.0, 1.0]]),
        next_obs=jnp.arange(12.0).reshape(2, 3, 2),
        mask=jnp.array([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]]),
    )
    value_batch = jax.jit(mrq.value_batch, static_argnums=2)
    out = value_batch(model, window, raw)
    # Row 0: 1 + 0.5 * 2 + 0.25 * 4 = 3, bootstrapped with 0.5^3 (gamma^m, m = 3: the
    # discount field is gamma^(m-1) d and the TD target multiplies gamma once more);
    # row 1: 1 + 0.5 * 2 = 2 to a terminal. No scale anywhere: y = R + gamma^m d Q_targ.
    np.testing.assert_allclose(out.reward, [3.0, 2.0])
    np.testing.assert_allclose(out.discount, [0.25, 0.0])
    # MR.Q's for the same window: rewards / scale 2, discounts * target_scale 4 / scale 2.
    out = value_batch(model, window, scaled)
    np.testing.assert_allclose(out.reward, [1.5, 1.0])
    np.testing.assert_allclose(out.discount, [0.5, 0.0])


@pytest.mark.parametrize(
    "settings, message",
    [
        (dict(infonce_weight=-0.1), "infonce_weight must be >= 0, got -0.1"),
        (dict(infonce_temperature=0.0), "infonce_temperature must be > 0, got 0.0"),
        (dict(infonce_temperature=-1.0), "infonce_temperature must be > 0, got -1.0"),
        (dict(value_scaling="no"), "value_scaling must be true or false, got 'no'"),
    ],
)
def test_bad_drq_values_are_refused_in_one_line(settings, message):
    with pytest.raises(ValueError, match=message) as error:
        td3.Config(**{**TINY, **settings})
    assert "\n" not in str(error.value)


# What DR.Q's code changes in MR.Q's recipe (DRQ/DRQ.py's Hyperparameters and losses).
DRQ_CHANGES = {
    "encoder_hidden_sizes": [750, 750],
    "encoder_lr": 3e-4,
    "encoder_weight_decay": 0.01,
    "weight_decay": 0.01,
    "done_weight": 0.0,
    "infonce_weight": 0.1,
    "infonce_temperature": 0.1,
    "value_scaling": False,
    "replay_fade": 0.9999,
    "replay_fade_floor": 0.1,
}


@pytest.mark.parametrize("backend", ["gymnasium", "dm_control"])
def test_preset_drq_is_mrqs_with_drqs_changes_on_both_backends(backend):
    drq = presets.resolve("TD3", backend, "cheetah-run", "drq")
    base = presets.resolve("TD3", backend, "cheetah-run", "mrq")
    assert drq.name == f"drq/{backend}/*" and drq.device == "gpu"
    assert drq.settings == {**base.settings, **DRQ_CHANGES}
    assert "no cell measured yet" in drq.evidence and "DRQ/DRQ.py" in drq.evidence
    if backend == "dm_control":
        assert (drq.settings["action_repeat"], drq.settings["start_timesteps"]) == (2, 20000)
    else:
        assert "action_repeat" not in drq.settings and drq.settings["start_timesteps"] == 10000
    # The settings make a valid learner with the options on.
    config = td3.Config(**{k: tuple(v) if isinstance(v, list) else v
                           for k, v in drq.settings.items()
                           if k in td3.Config.__dataclass_fields__})  # fmt: skip
    assert (config.infonce_weight, config.value_scaling, config.done_weight) == (0.1, False, 0.0)
