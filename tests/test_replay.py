import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_rl.core import replay
from jax_rl.core.transition import Transition


def rows(start: int, n: int, obs_size: int = 3, action_size: int = 2) -> Transition:
    """n transitions whose every field encodes its row id start..start+n-1."""
    ids = np.arange(start, start + n, dtype=np.float32)
    return Transition(
        obs=np.repeat(ids[:, None], obs_size, 1),
        action=np.repeat(ids[:, None], action_size, 1),
        reward=ids,
        discount=np.ones(n, np.float32),
        next_obs=np.repeat(ids[:, None] + 0.5, obs_size, 1),
    )


def empty(capacity: int) -> replay.ReplayState:
    return replay.create(replay.ReplaySpec(capacity=capacity, obs_size=3, action_size=2))


def test_insert_fills_in_order_and_counts_size():
    state = replay.insert(empty(8), rows(0, 3))
    assert int(state.size) == 3 and int(state.position) == 3
    np.testing.assert_array_equal(state.data.reward[:3], [0, 1, 2])
    np.testing.assert_array_equal(state.data.reward[3:], 0)


def test_insert_wraps_around_and_overwrites_oldest():
    state = empty(5)
    state = replay.insert(state, rows(0, 4))
    state = replay.insert(state, rows(4, 3))  # rows 4, 5, 6: 5 and 6 wrap to slots 0, 1
    assert int(state.size) == 5
    assert int(state.position) == 2
    np.testing.assert_array_equal(state.data.reward, [5, 6, 2, 3, 4])
    np.testing.assert_array_equal(state.data.next_obs[:, 0], [5.5, 6.5, 2.5, 3.5, 4.5])


def test_single_row_inserts_wrap_many_times():
    state = empty(4)
    insert = jax.jit(replay.insert, donate_argnums=0)
    for i in range(11):
        state = insert(state, rows(i, 1))
    assert int(state.size) == 4 and int(state.position) == 11 % 4
    np.testing.assert_array_equal(np.sort(np.asarray(state.data.reward)), [7, 8, 9, 10])


def test_sample_draws_only_written_rows():
    state = replay.insert(empty(1000), rows(100, 7))
    batch = replay.sample(state, jax.random.key(0), 4096)
    # Rows 100..106 were written to slots 0..6; unwritten slots hold zeros.
    values = np.unique(np.asarray(batch.reward))
    np.testing.assert_array_equal(values, np.arange(100, 107))
    # Fields of one sampled row belong together.
    np.testing.assert_array_equal(batch.obs[:, 0], batch.reward)
    np.testing.assert_array_equal(batch.next_obs[:, 0], np.asarray(batch.reward) + 0.5)


def test_sample_is_roughly_uniform():
    state = replay.insert(empty(10), rows(0, 10))
    batch = replay.sample(state, jax.random.key(1), 20_000)
    counts = np.bincount(np.asarray(batch.reward).astype(int), minlength=10)
    assert counts.min() > 1700 and counts.max() < 2300


def test_insert_compiles_without_copying_the_buffer():
    """With the state donated, the compiled insert touches O(batch) memory:
    no operation produces a whole-buffer array and no extra buffer is allocated."""
    capacity = 1_000_000
    state = replay.create(replay.ReplaySpec(capacity=capacity, obs_size=16, action_size=4))
    batch = jax.tree_util.tree_map(lambda x: jnp.asarray(x[:1]), state.data)
    compiled = jax.jit(replay.insert, donate_argnums=0).lower(state, batch).compile()
    big_copies = [
        line
        for line in compiled.as_text().splitlines()
        if " copy(" in line and f"[{capacity}" in line.split("copy(")[0]
    ]
    assert big_copies == []
    memory = compiled.memory_analysis()
    if memory is not None:
        assert memory.temp_size_in_bytes < 1_000_000  # far below the 144 MB buffer


def test_buffer_that_does_not_fit_is_refused_with_a_clear_message():
    spec = replay.ReplaySpec(capacity=10_000_000, obs_size=100, action_size=10)
    with pytest.raises(replay.ReplayTooLargeError, match=r"needs 7\.9\d GiB.*smaller replay"):
        replay.create(spec, free_bytes=2 * 2**30)


def test_spec_rejects_non_positive_sizes():
    with pytest.raises(ValueError, match="capacity must be a positive integer"):
        replay.ReplaySpec(capacity=0, obs_size=3, action_size=1)


def test_nbytes_counts_every_field():
    spec = replay.ReplaySpec(capacity=10, obs_size=3, action_size=2)
    assert spec.nbytes == 10 * (3 + 3 + 2 + 1 + 1) * 4


def test_population_gather_reads_each_agents_own_rows():
    """gather_population(data, rows)[i] == agent i's buffer at rows[i]."""
    agents, capacity = 3, 7
    obs = np.arange(agents * capacity * 2, dtype=np.float32).reshape(agents, capacity, 2)
    data = Transition(
        obs=obs,
        action=-obs[..., :1],
        reward=obs[..., 0],
        discount=obs[..., 1],
        next_obs=obs + 0.5,
    )
    rows = np.array([[0, 6, 6, 2], [1, 1, 0, 5], [6, 3, 4, 0]], np.int32)
    gathered = replay.gather_population(data, jnp.asarray(rows))
    leaves = jax.tree_util.tree_leaves
    for field, stored in zip(leaves(gathered), leaves(data), strict=True):
        assert field.shape == (agents, 4) + stored.shape[2:]
        for i in range(agents):
            np.testing.assert_array_equal(field[i], stored[i][rows[i]])
