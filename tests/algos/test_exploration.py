"""Exploration held until the first reward (`jax_rl.algos.exploration`), by hand and in
TD3 and SAC: held on rewards that say nothing, released by the first that differ, and
nothing changed where rewards differ from the first batch (the dense tasks)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_rl.algos import exploration, sac, td3
from jax_rl.core.transition import Transition

OBS, ACT = 3, 2


def watch_after(*batches):
    watch = exploration.init(sac.Config(hold_exploration=True))
    for step, rewards in enumerate(batches):
        watch = exploration.observe(watch, jnp.asarray(rewards, jnp.float32), jnp.int32(step))
    return watch


def test_the_watch_counts_the_updates_whose_rewards_differ():
    assert exploration.init(sac.Config()) is None
    held = watch_after([0.0, 0.0], [-1.0, -1.0])  # constant rewards say nothing
    assert (int(held.found_at), int(held.informative), bool(held.now)) == (-1, 0, False)
    assert not bool(exploration.found(held))
    watch = watch_after([0.0, 0.0], [0.0, 0.0], [0.0, 1.0], [0.0, 0.0], [2.0, 0.0], [0.0, 0.0])
    assert (int(watch.found_at), int(watch.informative), bool(watch.now)) == (2, 2, False)
    assert int(exploration.schedule_clock(watch, jnp.int32(6))) == 2
    assert int(exploration.schedule_clock(None, jnp.int32(7))) == 7
    # Held while no batch differed; after, `now` follows the latest batch.
    assert float(exploration.unless_held(held, 1.0, 0.0)) == 0.0
    assert float(exploration.unless_held(watch, 1.0, 0.0)) == 1.0
    assert float(exploration.unless_held(watch, 1.0, 0.0, now=True)) == 0.0
    assert exploration.unless_held(None, 1.0, 0.0, now=True) == 1.0


def batch(key, rewards) -> Transition:
    k1, k2, k3 = jax.random.split(key, 3)
    n = len(rewards)
    return Transition(
        obs=jax.random.normal(k1, (n, OBS)),
        action=jax.random.uniform(k2, (n, ACT), minval=-1.0, maxval=1.0),
        reward=jnp.asarray(rewards, jnp.float32),
        discount=jnp.ones(n),
        next_obs=jax.random.normal(k3, (n, OBS)),
    )


def train(algo, config, reward_rows):
    state = algo.init(jax.random.key(0), OBS, ACT, config)
    for i, rewards in enumerate(reward_rows):
        state, metrics = algo.update(
            state, batch(jax.random.key(i), rewards), jax.random.key(99 + i)
        )
    return state, metrics


ZEROS = [[0.0] * 8] * 6
LATER = [*ZEROS, [0.0] * 7 + [1.0], [0.0] * 8]


def test_sac_steps_its_temperature_only_on_batches_whose_rewards_differ():
    held = sac.Config(hidden_sizes=(16,), init_alpha=0.5, alpha_lr=0.1, hold_exploration=True)
    state, metrics = train(sac, held, ZEROS)
    assert float(jnp.exp(state.log_alpha)) == pytest.approx(0.5, rel=1e-6)
    assert float(metrics["explore/reward_found"]) == 0.0
    # Without the part, the same zero rewards move alpha at once.
    free, _ = train(sac, held.replace(hold_exploration=False), ZEROS)
    assert abs(float(jnp.exp(free.log_alpha)) - 0.5) > 0.01
    # Update 6's batch holds a 1: alpha takes that one step, and none on the zeros after.
    once, _ = train(sac, held, LATER[:7])
    state, metrics = train(sac, held, LATER)
    assert int(state.reward_watch.found_at) == 6 and float(metrics["explore/reward_found"]) == 1
    assert float(metrics["explore/informative"]) == 0.0  # update 7's batch: zeros
    assert abs(float(jnp.exp(once.log_alpha)) - 0.5) > 0.01
    assert float(state.log_alpha) == float(once.log_alpha)


def test_the_temperature_floor_by_hand():
    floored = sac.Config(alpha_min=0.25)
    low, high = jnp.log(jnp.float32(0.1)), jnp.log(jnp.float32(0.4))
    assert float(exploration.floor_temperature(floored, low)) == float(jnp.log(jnp.float32(0.25)))
    assert float(exploration.floor_temperature(floored, high)) == float(high)
    assert exploration.floor_temperature(sac.Config(), low) is low  # no floor: untouched
    with pytest.raises(ValueError, match="alpha_min must be a number >= 0, got -0.1"):
        sac.Config(alpha_min=-0.1)
    with pytest.raises(ValueError, match=r"must not exceed init_alpha \(0.5\)"):
        sac.Config(alpha_min=0.6, init_alpha=0.5)


def test_sac_temperature_stops_at_its_floor_and_moves_freely_above_it():
    # Zero rewards: nothing argues for exploration, and alpha falls every update (Adam's
    # steps of about alpha_lr in log(alpha)): from 0.5 to below 0.3 in 6 updates.
    free_config = sac.Config(hidden_sizes=(16,), init_alpha=0.5, alpha_lr=0.1)
    free, _ = train(sac, free_config, ZEROS)
    assert float(jnp.exp(free.log_alpha)) < 0.3
    floored, metrics = train(sac, free_config.replace(alpha_min=0.3), ZEROS)
    assert float(floored.log_alpha) == float(jnp.log(jnp.float32(0.3)))
    assert float(metrics["dual/alpha"]) == pytest.approx(0.3, rel=1e-6)
    # Above the floor the two runs are the same run, bit for bit (2 updates: alpha 0.41).
    above, _ = train(sac, free_config.replace(alpha_min=0.3), ZEROS[:2])
    plain, _ = train(sac, free_config, ZEROS[:2])
    assert float(jnp.exp(plain.log_alpha)) > 0.3
    leaves = jax.tree_util.tree_leaves(above)
    assert all(
        bool(jnp.array_equal(a, b))
        for a, b in zip(leaves, jax.tree_util.tree_leaves(plain), strict=True)
    )


def test_td3_holds_its_std_and_its_schedule_counts_informative_updates():
    config = td3.Config(
        hidden_sizes=(16,), hold_exploration=True, initial_exploration_noise=0.5,
        exploration_noise=0.1, exploration_decay=4,
    )  # fmt: skip
    state, _ = train(td3, config, ZEROS)
    assert float(td3.exploration_std(state)) == pytest.approx(0.5)  # 6 updates, held
    state, _ = train(td3, config, LATER)  # 8 updates, one informative: 1 of 4
    assert float(td3.exploration_std(state)) == pytest.approx(0.5 + 0.25 * (0.1 - 0.5))
    state, _ = train(td3, config, [*LATER, [0.0, 1.0] * 4, [0.0, 3.0] * 4])  # 3 of 4
    assert float(td3.exploration_std(state)) == pytest.approx(0.5 + 0.75 * (0.1 - 0.5))
    # Without a schedule the first reward would end the exploration at once: refused.
    with pytest.raises(ValueError, match="give exploration_decay > 0"):
        td3.Config(hold_exploration=True)


DENSE = [list(np.linspace(-1.0, 1.0, 8) + i) for i in range(5)]


@pytest.mark.parametrize(
    "algo, config",
    [
        (sac, sac.Config(hidden_sizes=(16,), alpha_lr=0.1)),
        (sac, sac.Config(hidden_sizes=(16,), crossq=True, policy_freq=3)),
        (td3, td3.Config(hidden_sizes=(16,), exploration_decay=3, initial_exploration_noise=0.6)),
    ],
    ids=["SAC", "SAC-crossq", "TD3-schedule"],
)
def test_where_rewards_differ_from_the_first_batch_nothing_changes(algo, config):
    held, _ = train(algo, config.replace(hold_exploration=True), DENSE)
    plain, _ = train(algo, config, DENSE)
    assert int(held.reward_watch.found_at) == 0 and int(held.reward_watch.informative) == 5
    # Every parameter, optimiser state, dual and statistic, bit for bit (the configs differ
    # in the flag alone, a static field: no leaf).
    leaves = jax.tree_util.tree_leaves(held.replace(reward_watch=None))
    expected = jax.tree_util.tree_leaves(plain)
    assert len(leaves) == len(expected)
    assert all(bool(jnp.array_equal(a, b)) for a, b in zip(leaves, expected, strict=True))
    if algo is td3:
        assert float(td3.exploration_std(held)) == float(td3.exploration_std(plain))


def test_held_td3_explores_around_zero_and_evaluates_its_actor():
    config = td3.Config(
        hidden_sizes=(16,), hold_exploration=True, initial_exploration_noise=0.5,
        exploration_decay=4,
    )  # fmt: skip
    obs = jax.random.normal(jax.random.key(5), (4, OBS))
    noise = jax.random.normal(jax.random.key(6), (4, ACT))
    key = jax.random.key(7)
    held, _ = train(td3, config, ZEROS)
    explored = td3.act(held, obs, key, deterministic=False, noise=noise)
    np.testing.assert_array_equal(explored, jnp.clip(0.5 * noise, -1.0, 1.0))
    actor = td3.act(held, obs, key, deterministic=True)
    assert not np.allclose(actor, 0.0)  # evaluation acts with the actor
    found, _ = train(td3, config, LATER)
    std = td3.exploration_std(found)
    expected = jnp.clip(td3.act(found, obs, key, deterministic=True) + std * noise, -1.0, 1.0)
    np.testing.assert_allclose(
        td3.act(found, obs, key, deterministic=False, noise=noise), expected, rtol=1e-6
    )


def share_watch_after(*batches):
    config = td3.Config(hold_exploration=True, exploration_share=0.25)
    watch = exploration.init(config)
    for step, rewards in enumerate(batches):
        watch = exploration.observe(watch, jnp.asarray(rewards, jnp.float32), jnp.int32(step))
    return config, watch


def test_the_share_of_informative_rows_and_the_std_it_sets_by_hand():
    # Rows above their batch's lowest reward: none where all agree, 2 of 4 here.
    assert float(exploration.row_share(jnp.zeros(4))) == 0.0
    assert float(exploration.row_share(jnp.asarray([0.0, 1.0, 0.0, 3.0]))) == 0.5
    assert float(exploration.row_share(jnp.asarray([-1.0, -1.0, 0.0, -1.0]))) == 0.25
    rate = 1.0 / exploration.SHARE_UPDATES
    config, watch = share_watch_after([0.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 3.0])
    assert isinstance(watch, exploration.ShareWatch)
    assert float(watch.share) == pytest.approx(0.5 * rate, rel=1e-5)  # 0, then 0 + 0.5 r
    assert int(watch.informative) == 1 and int(watch.found_at) == 1
    _, again = share_watch_after([0.0, 1.0, 0.0, 3.0], [0.0, 1.0, 0.0, 3.0])
    assert float(again.share) == pytest.approx(0.5 * rate + (0.5 - 0.5 * rate) * rate, rel=1e-5)
    # The std: initial_exploration_noise (1.0) at share 0, less 0.9 x share / 0.25 after.
    std = exploration.scheduled_std(config, watch, jnp.int32(2))
    assert float(std) == pytest.approx(1.0 - 0.9 * (0.5 * rate) / 0.25, rel=1e-5)
    full = watch.replace(share=jnp.float32(0.3))
    assert float(exploration.scheduled_std(config, full, jnp.int32(2))) == pytest.approx(0.1)
    half = watch.replace(share=jnp.float32(0.125))
    assert float(exploration.scheduled_std(config, half, jnp.int32(2))) == pytest.approx(0.55)
    assert float(exploration.metrics(half)["explore/share"]) == 0.125
    # Without the share the watch is the plain one, with no share in its metrics.
    plain = exploration.init(td3.Config(hold_exploration=True, exploration_decay=5))
    assert not isinstance(plain, exploration.ShareWatch)
    assert "explore/share" not in exploration.metrics(plain)


def test_td3_std_falls_with_the_share_and_returns_when_rewards_go():
    config = td3.Config(
        hidden_sizes=(16,), hold_exploration=True, exploration_share=0.25, policy_freq=1
    )
    rich = [[0.0, 1.0] * 4] * 4  # half the rows informative
    state, metrics = train(td3, config, rich)
    risen = float(state.reward_watch.share)
    assert risen > 0 and float(metrics["explore/share"]) == pytest.approx(risen)
    std_rich = float(td3.exploration_std(state))
    assert std_rich < config.initial_exploration_noise
    # Rewards gone (a policy that lost what it found): the share decays, the std rises.
    for i in range(3):
        state, _ = td3.update(state, batch(jax.random.key(50 + i), [0.0] * 8), jax.random.key(i))
    assert float(state.reward_watch.share) < risen
    assert float(td3.exploration_std(state)) > std_rich
    # Dense rewards reach the share: the std is exploration_noise.
    state = state.replace(reward_watch=state.reward_watch.replace(share=jnp.float32(0.9)))
    assert float(td3.exploration_std(state)) == pytest.approx(config.exploration_noise)


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"exploration_share": 1.5, "hold_exploration": True}, "must be in [0, 1]"),
        ({"exploration_share": 0.1}, "give hold_exploration too"),
        (
            {"exploration_share": 0.1, "hold_exploration": True, "exploration_decay": 100},
            "replaces the exploration_decay schedule",
        ),
    ],
)
def test_the_share_refuses_what_it_cannot_run(fields, words):
    with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("]", r"\]")):
        td3.Config(**fields)
