"""MR.Q's representation (`jax_rl.algos.mrq`), its windows of the replay and TD3 with it."""

import math

import flax.serialization
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_rl.algos import mrq, sac, td3
from jax_rl.core import replay
from jax_rl.core.replay import Window
from jax_rl.core.transition import Transition
from jax_rl.loops import common, host

TINY = dict(
    representation="mrq",
    hidden_sizes=(16, 16),
    encoder_hidden_sizes=(16, 16),
    embedding_size=8,
    action_embedding_size=4,
    num_bins=9,
)


def test_two_hot_and_its_inverse_by_hand():
    values = mrq.bins(5, 2.0)  # symexp of -2, -1, 0, 1, 2
    e1, e2 = math.e - 1, math.e**2 - 1
    np.testing.assert_allclose(values, [-e2, -e1, 0.0, e1, e2], rtol=1e-6)
    got = mrq.two_hot(jnp.array([1.0, -e1, 100.0, -100.0]), values)
    t = 1.0 / e1  # 1.0 lies between the bins 0 and e - 1
    want = [
        [0, 0, 1 - t, t, 0],
        [0, 1, 0, 0, 0],  # on a bin: all of it there
        [0, 0, 0, 0, 1],  # beyond the bins: clipped to the last
        [1, 0, 0, 0, 0],
    ]
    np.testing.assert_allclose(got, want, atol=1e-6)
    # The inverse reads a distribution back as the mean of the bins: exact for a two-hot.
    logits = jnp.log(jnp.array(want[0], jnp.float32) + 1e-30)
    assert float(mrq.two_hot_inverse(logits, values)) == pytest.approx(1.0, abs=1e-5)
    x = jnp.array([-3.0, -0.5, 0.0, 0.25, 7.0])
    np.testing.assert_allclose(mrq.symlog(mrq.symexp(x)), x, rtol=1e-6)
    assert float(mrq.symlog(jnp.float32(e1))) == pytest.approx(1.0)


def _constant_params(config, zs_target_bias, prediction, state_size=2, action_size=1):
    """Encoders whose kernels are all zero: z_s(s) = ELU(LN(zs_target_bias)) for every s, and
    the latent model predicts `prediction` = [done, z' (Z), reward logits (K)] whatever it is
    given."""
    params = mrq.init_params(jax.random.key(0), state_size, action_size, (4,), config)
    params = jax.tree_util.tree_map(jnp.zeros_like, params)
    state = list(params.state)
    state[-1] = {**state[-1], "bias": jnp.asarray(zs_target_bias, jnp.float32)}
    model = [{**params.model[0], "bias": jnp.asarray(prediction, jnp.float32)}]
    return params.replace(state=state, model=model)


def test_latent_model_losses_on_a_hand_made_three_step_window():
    # One row of 3 steps; the episode ends at a terminal after step 1, so step 2 is masked.
    config = td3.Config(**{**TINY, "embedding_size": 2, "num_bins": 5, "encoder_horizon": 3})
    config = config.replace(reward_bound=2.0)
    done, z_next, logits = 0.25, [1.0, -1.0], [0.0, 1.0, 2.0, 0.0, -1.0]
    params = _constant_params(config, [0.0, 0.0], [done, *z_next, *logits])
    target = _constant_params(config, [3.0, 1.0], [0.0] * 8)
    window = Window(
        obs=jnp.zeros((1, 3, 2)),
        action=jnp.zeros((1, 3, 1)),
        reward=jnp.array([[1.0, 0.0, 5.0]]),
        discount=jnp.array([[1.0, 0.0, 1.0]]),
        next_obs=jnp.zeros((1, 3, 2)),
        mask=jnp.array([[1.0, 1.0, 0.0]]),
    )
    losses = jax.jit(mrq.losses, static_argnums=3)(params, target, window, config)
    # The target encoder's z_s: ELU(LN([3, 1])) = ELU([1, -1]) (LN's epsilon aside).
    zt = np.array([1.0, math.exp(-1.0) - 1.0])
    dynamics = 2 * np.mean((np.array(z_next) - zt) ** 2)  # steps 0 and 1
    log_p = np.array(logits) - np.log(np.exp(logits).sum())
    t = 1.0 / (math.e - 1)
    cross_1 = -((1 - t) * log_p[2] + t * log_p[3])  # r = 1 between the bins 0 and e - 1
    cross_0 = -log_p[2]  # r = 0 on the middle bin
    done_loss = (done - 0.0) ** 2 + (done - 1.0) ** 2  # not done, then terminal
    assert float(losses.dynamics) == pytest.approx(dynamics, rel=1e-4)
    assert float(losses.reward) == pytest.approx(cross_1 + cross_0, rel=1e-5)
    assert float(losses.done) == pytest.approx(done_loss, rel=1e-6)
    total, _ = jax.jit(mrq.loss, static_argnums=3)(params, target, window, config)
    want = dynamics + 0.1 * (cross_1 + cross_0) + 0.1 * done_loss
    assert float(total) == pytest.approx(want, rel=1e-4)


def test_value_batch_is_the_multi_step_return_cut_at_the_episode_end():
    config = td3.Config(**TINY, value_horizon=3).replace(discount=0.5)
    model = mrq.init(jax.random.key(0), 2, 1, config).replace(
        scale=jnp.float32(2.0), target_scale=jnp.float32(1.0)
    )
    next_obs = jnp.arange(12.0).reshape(2, 3, 2)
    window = Window(
        obs=jnp.zeros((2, 3, 2)),
        action=jnp.zeros((2, 3, 1)),
        reward=jnp.array([[1.0, 2.0, 4.0], [1.0, 2.0, 4.0]]),
        discount=jnp.array([[1.0, 1.0, 1.0], [1.0, 0.0, 1.0]]),
        next_obs=next_obs,
        mask=jnp.array([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]]),
    )
    out = jax.jit(mrq.value_batch, static_argnums=2)(model, window, config)
    # Row 0: 1 + 0.5 * 2 + 0.25 * 4 = 3, bootstrapped with 0.5^2 from s'_2; row 1: 1 + 1 = 2
    # to a terminal. Rewards / scale 2, discounts * target_scale 1 / scale 2.
    np.testing.assert_allclose(out.reward, [1.5, 1.0])
    np.testing.assert_allclose(out.discount, [0.25 * 0.5, 0.0])
    np.testing.assert_allclose(out.next_obs, [next_obs[0, 2], next_obs[1, 1]])


def _episodes_buffer(capacity, steps, seed):
    """A buffer filled by `steps` steps of episodes that end at random (terminal or time
    limit), wrapping around; and per row its time and episode (the truth)."""
    rng = np.random.default_rng(seed)
    time = np.full(capacity, -1)
    episode = np.full(capacity, -1)
    obs, number = rng.normal(size=3).astype(np.float32), 0
    rows = []
    for t in range(steps):
        next_obs = rng.normal(size=3).astype(np.float32)
        end = rng.random() < 0.15
        terminal = end and rng.random() < 0.5
        rows.append((obs, np.float32(t), np.float32(0.0 if terminal else 1.0), next_obs))
        time[t % capacity], episode[t % capacity] = t, number
        obs = next_obs
        if end:  # a reset: the next row starts elsewhere
            obs, number = rng.normal(size=3).astype(np.float32), number + 1
    obs, reward, discount, next_obs = (np.stack(x) for x in zip(*rows, strict=True))
    data = Transition(obs=obs, action=np.zeros((steps, 1), np.float32), reward=reward,
                      discount=discount, next_obs=next_obs)  # fmt: skip
    state = replay.create(replay.ReplaySpec(capacity=capacity, obs_size=3, action_size=1))
    # In at most capacity rows at a time, as a loop that wraps around writes them.
    for start in range(0, steps, capacity):
        part = jax.tree_util.tree_map(lambda x, s=start: jnp.asarray(x[s : s + capacity]), data)
        state = replay.insert(state, part)
    return state, time, episode


@pytest.mark.parametrize("steps", [37, 90], ids=["filling", "wrapped"])
def test_windows_never_cross_an_episode_end_or_the_write_position_unmasked(steps):
    capacity, horizon = 64, 5
    state, time, episode = _episodes_buffer(capacity, steps, seed=steps)
    starts = jnp.arange(int(state.size), dtype=jnp.int32)
    window = replay.gather_window(state, starts, horizon)
    rows = (np.asarray(starts)[:, None] + np.arange(horizon)) % capacity
    same = (episode[rows] == episode[rows[:, :1]]) & (
        time[rows] == time[rows[:, :1]] + np.arange(horizon)
    )
    np.testing.assert_array_equal(np.asarray(window.mask), same.astype(np.float32))
    np.testing.assert_array_equal(np.asarray(window.reward), np.asarray(state.data.reward)[rows])
    # A population's buffers give every agent the windows of its own.
    both = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), state)
    both = both.replace(position=state.position, size=state.size)
    pair = replay.gather_window_population(both, jnp.stack([starts, starts]), horizon)
    np.testing.assert_array_equal(np.asarray(pair.mask[1]), np.asarray(window.mask))


@pytest.mark.parametrize(
    "settings, message",
    [
        (dict(critic="categorical"), "representation mrq trains with the scalar critic"),
        (dict(crossq=True), "representation mrq trains with the scalar critic"),
        (dict(normalize_obs=True), "drop normalize_obs"),
        (dict(num_bins=1), "num_bins must be an integer >= 2"),
        (dict(encoder_horizon=0), "encoder_horizon must be a positive integer"),
        (dict(reward_bound=0.0), "reward_bound must be > 0"),
        (dict(reward_weight=-1.0), "reward_weight must be >= 0"),
    ],
)
def test_config_refuses_what_mrq_cannot_train_with(settings, message):
    with pytest.raises(ValueError, match=message):
        td3.Config(**{**TINY, **settings})


def test_loops_refuse_mrq_where_they_cannot_hand_out_windows():
    config = td3.Config(**TINY)
    with pytest.raises(ValueError, match="device pipeline does not"):
        common.check_learner(td3, config, None)
    with pytest.raises(ValueError, match="n_step must be 1, got 3"):
        common.check_learner(td3, config, 3)
    common.check_learner(td3, td3.Config(), None)  # a learner without windows: anything


def test_short_learning_run_improves():
    # A bandit in disguise: reward -(a - tanh(s_0))^2 whatever follows; one long episode
    # of random actions. The deterministic policy must come far closer to the best action.
    config = td3.Config(**TINY, replay="lap", target_every=25, encoder_every=25, policy_freq=1)
    config = config.replace(discount=0.5, actor_lr=1e-3, critic_lr=1e-3, encoder_lr=1e-3)
    n, key = 1024, jax.random.key(0)
    obs = jax.random.normal(key, (n + 1, 2))
    action = jax.random.uniform(jax.random.key(1), (n, 1), minval=-1.0, maxval=1.0)
    best = jnp.tanh(obs[:-1, :1])
    data = Transition(
        obs=obs[:-1], action=action, reward=-((action - best) ** 2).sum(-1),
        discount=jnp.ones(n), next_obs=obs[1:],
    )  # fmt: skip
    buffer = replay.insert(replay.create(replay.ReplaySpec(n, 2, 1, prioritized=True)), data)
    state = td3.init(jax.random.key(2), 2, 1, config)
    state = td3.observe(state, data)
    probe = jax.random.normal(jax.random.key(3), (256, 2))

    def gap(state):
        return float(((td3.act(state, probe, key, True) - jnp.tanh(probe[:, :1])) ** 2).mean())

    @jax.jit
    def train(state, buffer):
        def step(carry, k):
            state, buffer = carry
            sample_key, update_key = jax.random.split(k)
            rows = replay.sample_rows(sample_key, buffer.size, 64, buffer.priority)
            state, metrics = td3.update(state, replay.gather_window(buffer, rows, 5), update_key)
            buffer = replay.write_priorities(buffer, rows, metrics[replay.PRIORITY_KEY])
            return (state, buffer), metrics["loss/encoder_reward"]

        (state, _), losses = jax.lax.scan(step, (state, buffer), jax.random.split(key, 300))
        return state, losses

    before = gap(state)
    state, losses = train(state, buffer)
    assert np.isfinite(np.asarray(losses)).all()
    assert float(losses[-20:].mean()) < float(losses[:20].mean())
    assert gap(state) < 0.6 * before, (before, gap(state))


def test_sac_takes_mrq_too():
    # Traced, not compiled: SAC reads the same seam (its update on windows, z_s and z_sa).
    config = sac.Config(**TINY)
    state = sac.init(jax.random.key(0), 3, 1, config)
    assert sac.horizon(config) == 5
    buffer, _, _ = _episodes_buffer(32, 40, seed=1)
    window = replay.gather_window(buffer, jnp.arange(8, dtype=jnp.int32), 5)
    new, metrics = jax.eval_shape(sac.update, state, window, jax.random.key(1))
    assert "loss/encoder_dynamics" in metrics and "loss/critic" in metrics
    assert jax.tree_util.tree_structure(new) == jax.tree_util.tree_structure(state)


def test_host_population_killed_and_resumed_ends_as_the_uninterrupted_one(tmp_path):
    from test_checkpoint import Crash, CrashingLogger

    from jax_rl.envs.dm_control import DMControlEnv
    from jax_rl.io.checkpoint import Checkpointer
    from jax_rl.io.logger import PopulationLogger, RunLogger

    config = host.HostLoopConfig(max_timesteps=240, start_timesteps=80, batch_size=16,
                                 eval_freq=120, eval_episodes=1, log_freq=40)  # fmt: skip
    configs = [
        td3.Config(**TINY, replay="lap", target_every=20, encoder_every=20, policy_freq=1,
                   exploration_noise=noise)
        for noise in (0.2, 0.3)
    ]  # fmt: skip

    def run(out, crash_at=None, resume=False):
        agents = [CrashingLogger(out / n, config.max_timesteps, progress=False,
                                 crash_at=crash_at) for n in "ab"]  # fmt: skip
        logger = PopulationLogger(agents, RunLogger(out, config.max_timesteps, progress=False))
        control = common.RunControl(Checkpointer(out / "checkpoints"), every=120,
                                    resume=resume, identity={"policy": "TD3"})  # fmt: skip
        envs = [DMControlEnv("cartpole", "swingup", seed=s) for s in (0, 1)]
        evals = [DMControlEnv("cartpole", "swingup", seed=s + 10) for s in (0, 1)]
        try:
            return host.train_population(td3, configs, [0, 1], envs, evals, config, logger, control)
        finally:
            logger.close()

    whole = run(tmp_path / "whole")
    with pytest.raises(Crash):
        run(tmp_path / "cut", crash_at=200)
    resumed = run(tmp_path / "cut", resume=True)
    for i in range(2):
        assert flax.serialization.to_bytes(resumed.agent(i).agent) == flax.serialization.to_bytes(
            whole.agent(i).agent
        )
    # The loop's windows follow its episode (1000 steps: no end yet) bit for bit, up to the
    # write position after the newest row.
    replayed = whole.agent(0).replay
    window = replay.gather_window(replayed, jnp.array([0, 100, 234, 239], jnp.int32), 5)
    np.testing.assert_array_equal(window.mask[:3], np.ones((3, 5)))
    np.testing.assert_array_equal(window.mask[3], [1, 0, 0, 0, 0])
