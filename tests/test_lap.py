"""LAP prioritised replay: sampling by priority, priorities written back, new rows at the
running maximum, the loss and priorities by hand, and both loops writing back."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_rl.algos import common, sac, td3
from jax_rl.core import replay
from jax_rl.core.transition import Transition
from jax_rl.loops import host


def rows(n: int, start: float = 0.0) -> Transition:
    """n rows whose obs (size 1) number them start, start + 1, ..."""
    values = jnp.arange(n, dtype=jnp.float32) + start
    return Transition(
        obs=values[:, None], action=jnp.zeros((n, 1)), reward=values,
        discount=jnp.ones(n), next_obs=values[:, None],
    )  # fmt: skip


def prioritized(capacity: int = 8) -> replay.ReplayState:
    return replay.create(replay.ReplaySpec(capacity, 1, 1, prioritized=True))


def test_sampling_frequencies_follow_the_priorities():
    state = replay.insert(prioritized(), rows(5))  # 3 rows never written
    priorities = jnp.array([1.0, 2.0, 0.5, 4.0, 2.5])
    state = replay.write_priorities(state, jnp.arange(5), priorities)
    drawn = replay.sample_rows(jax.random.key(0), state.size, 100_000, state.priority)
    counts = np.bincount(np.asarray(drawn), minlength=8)
    expected = np.asarray(priorities) / float(priorities.sum())
    np.testing.assert_allclose(counts[:5] / 100_000, expected, rtol=0.02)
    assert counts[5:].sum() == 0


def test_two_level_sampling_across_a_block_boundary():
    """Capacity 1200 drawn 4 rows at a time: blocks of 16 rows (`block_width`); the rows
    with priority, 12-17, straddle the boundary at 16."""
    assert replay.block_width(1200, 4) == 16 and replay.block_width(101, 256) == 1
    state = replay.insert(prioritized(1200), rows(20))
    priorities = jnp.zeros(20).at[12:18].set(jnp.array([1.0, 2.0, 0.5, 4.0, 2.5, 3.0]))
    state = replay.write_priorities(state, jnp.arange(20), priorities)
    keys = jax.random.split(jax.random.key(3), 25_000)
    drawn = jax.vmap(lambda k: replay.sample_rows(k, state.size, 4, state.priority))(keys)
    counts = np.bincount(np.asarray(drawn).reshape(-1), minlength=1200)
    expected = np.asarray(priorities[12:18]) / float(priorities.sum())
    np.testing.assert_allclose(counts[12:18] / 100_000, expected, rtol=0.02)
    assert counts.sum() == counts[12:18].sum()


def test_written_priorities_and_new_rows_at_the_running_maximum():
    state = replay.insert(prioritized(), rows(4))
    assert state.priority.tolist() == [1.0] * 4 + [0.0] * 4  # the maximum starts at 1
    state = replay.write_priorities(state, jnp.array([1, 3]), jnp.array([3.0, 1.5]))
    assert state.priority.tolist() == [1.0, 3.0, 1.0, 1.5] + [0.0] * 4
    assert float(state.max_priority) == 3.0
    state = replay.write_priorities(state, jnp.array([1]), jnp.array([1.25]))
    assert float(state.max_priority) == 3.0  # the running maximum, not the buffer's
    state = replay.insert(state, rows(2, start=4.0))
    assert state.priority.tolist() == [1.0, 1.25, 1.0, 1.5, 3.0, 3.0, 0.0, 0.0]


def test_a_population_writes_each_agents_priorities():
    one = replay.insert(prioritized(), rows(3))
    pop = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), one)
    pop = pop.replace(position=one.position, size=one.size)
    pop = replay.write_priorities_population(
        pop, jnp.array([[0, 2], [1, 1]]), jnp.array([[2.0, 5.0], [3.0, 3.0]])
    )
    assert pop.priority[:, :3].tolist() == [[2.0, 1.0, 5.0], [1.0, 3.0, 1.0]]
    assert pop.max_priority.tolist() == [5.0, 3.0]
    pop = replay.insert_population(
        pop, jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), rows(1))
    )
    assert pop.priority[:, 3].tolist() == [5.0, 3.0]


def test_uniform_buffers_have_no_priorities():
    state = replay.create(replay.ReplaySpec(4, 1, 1))
    assert (
        state.priority is None
        and replay.write_priorities(state, jnp.array([0]), jnp.ones(1)) is state
    )
    spec = replay.ReplaySpec(10, 3, 2)
    assert replay.ReplaySpec(10, 3, 2, prioritized=True).nbytes == spec.nbytes + 10 * 4


def test_lap_loss_and_priorities_by_hand():
    """Two critics, three rows: deltas q - y = [[0.5, -2, 0], [1, 3, -0.2]]."""
    q = jnp.array([[1.5, 0.0, 2.0], [2.0, 5.0, 1.8]])
    target = jnp.array([1.0, 2.0, 2.0])
    config = td3.Config(replay="lap", lap_alpha=0.5)
    loss, priority = common.td_loss(q, target, config, scale=1.0)
    # Huber: 0.5 d^2 below |d| = 1, |d| - 0.5 above.
    critic1 = (0.5 * 0.25 + (2 - 0.5) + 0.0) / 3
    critic2 = ((1 - 0.5) + (3 - 0.5) + 0.5 * 0.04) / 3
    assert float(loss) == pytest.approx(critic1 + critic2, rel=1e-6)
    # max_i |d_i| clipped below at 1, to the power alpha: 1, 3, 1 -> 1, sqrt 3, 1.
    np.testing.assert_allclose(priority, [1.0, np.sqrt(3.0), 1.0], rtol=1e-6)
    uniform, none = common.td_loss(q, target, td3.Config(), scale=0.5)
    assert none is None
    squares = (0.25 + 4 + 0) / 3 + (1 + 9 + 0.04) / 3
    assert float(uniform) == pytest.approx(0.5 * squares, rel=1e-6)


@pytest.mark.parametrize("algo", [td3, sac], ids=["TD3", "SAC"])
def test_the_update_returns_the_priorities_of_its_rows(algo):
    config = algo.Config(replay="lap", hidden_sizes=(16,))
    state = algo.init(jax.random.key(0), 1, 1, config)
    batch = rows(5).replace(reward=jnp.array([0.0, 10.0, -30.0, 0.5, 2.0]))
    _, metrics = algo.update(state, batch, jax.random.key(1))
    priority = metrics[replay.PRIORITY_KEY]
    assert priority.shape == (5,) and bool((priority >= 1.0).all())
    # The rows with big rewards (big TD errors) get big priorities: |30|^0.4 ~ 3.9.
    assert float(priority[2]) > 3.5 and float(priority[1]) > 2.0 and float(priority[0]) < 1.1
    _, plain = algo.update(
        algo.init(jax.random.key(0), 1, 1, algo.Config(hidden_sizes=(16,))),
        batch,
        jax.random.key(1),
    )
    assert replay.PRIORITY_KEY not in plain


def test_the_host_loop_writes_the_priorities_back(tmp_path):
    """After a short run every written row holds a priority >= 1 (the minimum), some rows
    moved off the starting maximum (written back by updates), unwritten rows hold 0."""
    from jax_rl.envs.probes import ContextualBandit
    from jax_rl.io.logger import RunLogger

    loop = host.HostLoopConfig(
        max_timesteps=120, start_timesteps=40, batch_size=16, eval_freq=120,
        eval_episodes=1, log_freq=60, replay_size=200,
    )  # fmt: skip
    logger = RunLogger(tmp_path, loop.max_timesteps, progress=False)
    config = td3.Config(replay="lap", hidden_sizes=(16,))
    env, eval_env = ContextualBandit(seed=0), ContextualBandit(seed=1)
    result = host.train(td3, config, env, eval_env, loop, logger)
    logger.close()
    buffer = result.learner.replay
    priority = np.asarray(buffer.priority[0])
    assert priority.shape == (200,)
    assert (priority[:120] >= 1.0).all() and (priority[120:] == 0).all()
    assert len(np.unique(priority[:120])) > 10
    assert float(buffer.max_priority[0]) >= priority.max()
