"""DR.Q's faded prioritised replay (`replay.Fade`, the learners' replay_fade and
replay_fade_floor): ages read off the write position across the ring's wrap, sampling
probabilities by hand with the floor, fading off as today's sampler bit for bit, both loops
sampling by the faded priorities, and bad values refused in one line."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_rl import algos, main_dm_control
from jax_rl.algos import mpo, sac, td3
from jax_rl.core import replay
from jax_rl.core.transition import Transition
from jax_rl.loops import device, host
from jax_rl.loops.common import zero_metrics


def rows(n: int, start: float = 0.0, reward: float = 0.0) -> Transition:
    """n rows whose obs (size 1) number them start, start + 1, ..."""
    values = jnp.arange(n, dtype=jnp.float32) + start
    return Transition(
        obs=values[:, None], action=jnp.zeros((n, 1)), reward=jnp.full(n, reward),
        discount=jnp.ones(n), next_obs=values[:, None],
    )  # fmt: skip


def filled(capacity: int, written: int, per_insert: int = 1) -> replay.ReplayState:
    """A prioritised buffer after `written` rows, `per_insert` at a time."""
    state = replay.create(replay.ReplaySpec(capacity, 1, 1, prioritized=True))
    for start in range(0, written, per_insert):
        state = replay.insert(state, rows(min(per_insert, written - start), start))
    return state


@pytest.mark.parametrize("written, per_insert", [(5, 1), (8, 1), (11, 1), (27, 3), (16, 4)])
def test_ages_count_the_rows_written_since_across_the_wrap(written, per_insert):
    state = filled(8, written, per_insert)
    # Each row's obs is the number of rows written before it: its age is the rest.
    number = np.asarray(state.data.obs[:, 0]).astype(int)
    want = written - 1 - number
    got = np.asarray(replay.ages(state.position, 8))
    size = int(state.size)
    np.testing.assert_array_equal(got[:size], want[:size])
    if written == 11:  # by hand: position 3, rows 2, 1, 0 the newest, row 3 the oldest
        assert int(state.position) == 3
        np.testing.assert_array_equal(got, [2, 1, 0, 7, 6, 5, 4, 3])


def test_weights_follow_drqs_running_product():
    """DR.Q keeps a weight per row, multiplies all by the decay at each insertion and sets
    the new row's to 1 (`buffer.py` `add`), then clips it to [floor, 1] when sampling. The
    same in float64, against ours read off the write position, over three wraps."""
    capacity, decay, floor = 16, 0.8, 0.1
    weight, index = np.ones(capacity), 0
    state = replay.create(replay.ReplaySpec(capacity, 1, 1, prioritized=True))
    for step in range(3 * capacity + 5):
        weight *= decay
        weight[index] = 1.0
        index = (index + 1) % capacity
        state = replay.insert(state, rows(1, step))
        got = replay.fade_weights(state.position, capacity, replay.Fade(decay, floor))
        size = int(state.size)
        np.testing.assert_allclose(
            np.asarray(got)[:size], np.clip(weight, floor, 1.0)[:size], rtol=1e-5
        )


def test_sampling_probabilities_by_hand_with_the_floor():
    state = filled(8, 11)  # wrapped: position 3, ages [2, 1, 0, 7, 6, 5, 4, 3]
    priority = jnp.array([1.0, 2.0, 1.0, 4.0, 1.0, 2.0, 1.0, 1.0])
    state = replay.write_priorities(state, jnp.arange(8), priority)
    fade = replay.Fade(decay=0.5, floor=0.1)
    # 0.5^age, and the floor where 0.5^age < 0.1 (ages 4 to 7): exact in float32.
    weights = [0.25, 0.5, 1.0, 0.1, 0.1, 0.1, 0.1, 0.125]
    np.testing.assert_array_equal(replay.fade_weights(state.position, 8, fade), np.float32(weights))
    faded = np.array([0.25, 1.0, 1.0, 0.4, 0.1, 0.2, 0.1, 0.125])  # priority x weight
    n = 100_000
    drawn = replay.sample_rows(
        jax.random.key(0), state.size, n, state.priority, fade, state.position
    )
    counts = np.bincount(np.asarray(drawn), minlength=8)
    # Standard errors are at most 0.0016 here: 3 of them.
    np.testing.assert_allclose(counts / n, faded / faded.sum(), atol=0.005)
    # The stored priorities and their maximum stay raw: the fade is in the draw alone.
    np.testing.assert_array_equal(state.priority, priority)
    assert float(state.max_priority) == 4.0
    # sample_indexed reads the position off the buffer.
    _, indexed = replay.sample_indexed(state, jax.random.key(0), n, fade)
    np.testing.assert_array_equal(indexed, drawn)


def test_fading_off_is_todays_sampler_bit_for_bit():
    state = filled(64, 100)
    priority = jax.random.uniform(jax.random.key(1), (64,), minval=1.0, maxval=5.0)
    state = replay.write_priorities(state, jnp.arange(64), priority)
    key = jax.random.key(2)
    today = replay.sample_rows(key, state.size, 256, state.priority)

    def draw(fade):
        return replay.sample_rows(key, state.size, 256, state.priority, fade, state.position)

    np.testing.assert_array_equal(draw(None), today)  # no fade, given the position or not
    # A floor of 1 weighs every row by exactly 1: the same rows from the faded program.
    np.testing.assert_array_equal(draw(replay.Fade(0.5, 1.0)), today)
    assert not np.array_equal(draw(replay.Fade(0.5, 0.1)), today)
    # A learner with replay_fade 1 has no fade, whatever its floor; DR.Q's on, a Fade.
    for algo in (td3, sac):
        assert algos.fade(algo, algo.Config(replay="lap", replay_fade_floor=0.5)) is None
        on = algo.Config(replay="lap", replay_fade=0.9999, replay_fade_floor=0.1)
        assert algos.fade(algo, on) == replay.Fade(0.9999, 0.1)
    assert algos.fade(mpo, mpo.Config()) is None


def test_the_sampler_compiles_once_with_the_fade_static():
    sample = jax.jit(replay.sample_indexed, static_argnums=(2, 3))
    fade = replay.Fade(0.9999, 0.1)
    state = filled(32, 3)
    for step in range(40):  # the write position moves and wraps; the program stays
        sample(state, jax.random.key(step), 16, fade)
        state = replay.insert(state, rows(1, 3 + step))
    assert sample._cache_size() == 1


def _steep(**settings):
    """A tiny TD3 with LAP whose fade leaves almost nothing but the newest row: 1e-3 per
    row written (floor 1e-9), so that 16 draws all fall on the newest row with probability
    ~0.98 (the keys below are fixed)."""
    return td3.Config(replay="lap", hidden_sizes=(16,), **settings)


def _drawn(priority: np.ndarray) -> np.ndarray:
    """The rows an update wrote back: every row was written at priority 1 (the starting
    maximum), and a reward of 100 makes each TD error, so each new priority, far above 1."""
    return np.flatnonzero((priority != 1.0) & (priority != 0.0))


@pytest.mark.parametrize("fade", [1.0, 1e-3], ids=["off", "steep"])
def test_the_host_loop_draws_by_the_faded_priorities(fade):
    config = _steep(replay_fade=fade, replay_fade_floor=1e-9)
    learner = host.init_population(td3, [config], [0], 1, 1, capacity=64, batch_size=8)
    fns = host.make_step_functions(td3, batch_size=8)
    for step in range(40):
        learner = fns.collect(learner, rows(1, step, reward=100.0))
    # One step: insert row 40, draw 8 rows, write their priorities back.
    learner, _ = fns.learn(learner, rows(1, 40, reward=100.0), jnp.zeros((1, 1)))
    drawn = _drawn(np.asarray(learner.replay.priority[0]))
    if fade == 1.0:
        assert len(drawn) > 4  # 8 draws over 41 rows of priority 1
    else:
        np.testing.assert_array_equal(drawn, [40])
    # The next steps (another position) run the same program.
    for step in range(41, 44):
        learner, _ = fns.learn(learner, rows(1, step, reward=100.0), jnp.zeros((1, 1)))
    assert fns.learn._cache_size() == 1


def test_the_device_pipeline_draws_by_the_faded_priorities():
    """`_update_k_times` (the device pipeline's draw and updates) on a carry whose buffer
    holds 40 rows: with the steep fade its 2 x 8 draws all fall on the newest row."""
    config = _steep(replay_fade=1e-3, replay_fade_floor=1e-9)
    agent = td3.init(jax.random.key(0), 1, 1, config)
    buffer = replay.create(replay.ReplaySpec(64, 1, 1, prioritized=True))
    buffer = replay.insert(buffer, rows(40, reward=100.0))
    zero = jnp.int32(0)
    carry = device.Carry(
        agent=agent, replay=buffer, env=None, key=jax.random.key(1),
        metric_sums=zero_metrics(td3, agent, rows(8), jax.random.key(0)), num_updates=zero,
        env_steps=zero, updates=zero, finished_returns=jnp.float32(0.0),
        finished_episodes=zero, episode_draw=jnp.zeros(1),
    )  # fmt: skip
    update = jax.jit(lambda c, k: device._update_k_times(td3, c, k, 2, 8))
    carry = update(carry, jax.random.key(2))
    np.testing.assert_array_equal(_drawn(np.asarray(carry.replay.priority)), [39])


def refused(args: list[str], tmp_path, capsys) -> str:
    """dm_control's `main(args)` exits 2 before creating its --save_dir: its stderr."""
    never = tmp_path / "never"
    with pytest.raises(SystemExit) as exited:
        main_dm_control.main([*args, "--save_dir", str(never)])
    assert exited.value.code == 2
    assert not never.exists()
    return capsys.readouterr().err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--replay", "lap", "--replay_fade", "1.5"], "TD3 replay_fade must be in (0, 1], got 1.5"),
        (["--replay", "lap", "--replay_fade", "0"], "TD3 replay_fade must be in (0, 1], got 0.0"),
        (
            ["--policy", "SAC", "--replay", "lap", "--replay_fade_floor", "0"],
            "SAC replay_fade_floor must be in (0, 1], got 0.0",
        ),
        (
            ["--replay", "lap", "--replay_fade", "0.9", "--replay_fade_floor", "-1"],
            "replay_fade_floor must be in (0, 1], got -1.0",
        ),
        (["--replay_fade", "0.9999"], "replay_fade fades LAP's priorities: it needs replay lap"),
        (["--replay", "lap", "--replay_fade", "nan"], "expected a finite number"),
        (["--replay", "lap", "--replay_fade", "0.9,0.99"], "expected a number"),
        (["--policy", "MPO", "--replay_fade", "0.9"], "--replay_fade does not apply to --policy"),
    ],
)  # fmt: skip
def test_bad_fade_values_exit_2_with_one_clear_line(args, message, tmp_path, capsys):
    err = refused(args, tmp_path, capsys)
    assert message in err
    assert err.count("\n") == 1, err  # one line, nothing before it
