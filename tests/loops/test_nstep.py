import jax
import numpy as np
import pytest

from jax_rl.algos import td3
from jax_rl.core.transition import Transition
from jax_rl.envs.probes import Countdown
from jax_rl.io.logger import RunLogger
from jax_rl.loops import host
from jax_rl.loops.nstep import NStepQueue, n_step_transition


def one_step(t, reward, discount, p=2):
    """Agents' one-step transitions of time t: obs = [t, agent], next_obs = [t + 1, agent]."""
    agents = np.arange(p, dtype=np.float32)
    return Transition(
        obs=np.stack([np.full(p, t, np.float32), agents], axis=1),
        action=np.full((p, 1), t / 10, np.float32),
        reward=np.asarray(reward, np.float32),
        discount=np.asarray(discount, np.float32),
        next_obs=np.stack([np.full(p, t + 1, np.float32), agents], axis=1),
    )


def test_n_step_transition_by_hand():
    # Agent 0 (gamma 0.9): rewards 1, 2, 4, no episode end: all three summed,
    # discount gamma^2, next_obs from time 3.
    # Agent 1 (gamma 0.5): a true terminal at time 1 (reward 3), then a new episode:
    # two rewards, discount 0 (no bootstrap), next_obs the terminal one of time 1.
    steps = [one_step(0, [1, 1], [1, 1]), one_step(1, [2, 3], [1, 0]), one_step(2, [4, 5], [1, 1])]
    lasts = [np.array([False, False]), np.array([False, True]), np.array([False, False])]
    out = n_step_transition(steps, lasts, [0.9, 0.5])
    np.testing.assert_allclose(out.reward, [1 + 0.9 * 2 + 0.81 * 4, 1 + 0.5 * 3], rtol=1e-6)
    np.testing.assert_allclose(out.discount, [0.81, 0.0], rtol=1e-6)
    np.testing.assert_array_equal(out.next_obs, [[3, 0], [2, 1]])
    np.testing.assert_array_equal(out.obs, steps[0].obs)
    np.testing.assert_array_equal(out.action, steps[0].action)


def test_a_time_limit_stops_the_sum_but_still_bootstraps():
    # Truncated after time 0 (discount 1, last): the second step is the next episode's.
    steps = [one_step(0, [1], [1], p=1), one_step(1, [7], [1], p=1)]
    out = n_step_transition(steps, [np.array([True]), np.array([False])], [0.9])
    np.testing.assert_allclose(out.reward, [1.0])
    np.testing.assert_allclose(out.discount, [1.0])  # the learner's gamma makes it gamma^1
    np.testing.assert_array_equal(out.next_obs, [[1, 0]])


def test_queue_releases_each_step_once_n_minus_1_steps_late():
    queue = NStepQueue(3, [0.5, 0.5], obs_size=2, action_size=1)
    released = []
    for t in range(6):
        out = queue.push(one_step(t, [1, 1], [1, 1]), np.array([False, t == 3]))
        released.append(None if out is None else int(out.obs[0, 0]))
    assert released == [None, None, 0, 1, 2, 3]
    # Time 2's window is 2, 3, 4 for agent 0; agent 1's episode ended at time 3.
    queue = NStepQueue(3, [0.5, 0.5], obs_size=2, action_size=1)
    outs = [queue.push(one_step(t, [1, 1], [1, 1]), np.array([False, t == 3])) for t in range(5)]
    np.testing.assert_allclose(outs[4].reward, [1.75, 1.5])
    np.testing.assert_allclose(outs[4].discount, [0.25, 0.5])
    np.testing.assert_array_equal(outs[4].next_obs[:, 0], [5, 4])


def test_one_step_queue_passes_transitions_through():
    queue = NStepQueue(1, [0.99], obs_size=2, action_size=1)
    step = one_step(0, [1], [1], p=1)
    assert queue.push(step, np.array([False])) is step


def test_queue_state_round_trips_the_pending_steps():
    queue = NStepQueue(4, [0.9, 0.8], obs_size=2, action_size=1)
    for t in range(2):
        queue.push(one_step(t, [t, 2 * t], [1, 1]), np.array([False, t == 0]))
    arrays, count = queue.state()
    assert count == 2 and arrays["steps"].obs.shape == (3, 2, 2)
    copy = NStepQueue(4, [0.9, 0.8], obs_size=2, action_size=1)
    copy.restore(arrays, count)
    for t in range(2, 6):
        step, last = one_step(t, [1, 1], [1, 0]), np.array([t == 4, False])
        a, b = queue.push(step, last), copy.push(step, last)
        assert (a is None) == (b is None)
        if a is not None:
            leaves = zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b), strict=True)
            for x, y in leaves:
                np.testing.assert_array_equal(x, y)


def test_host_loop_stores_n_step_transitions(tmp_path):
    # Countdown: reward 1 per step, 5-step episodes ending by time limit (discount 1).
    config = host.HostLoopConfig(
        max_timesteps=40,
        start_timesteps=40,
        batch_size=8,
        eval_freq=1000,
        eval_episodes=1,
        log_freq=10,
        n_step=3,
    )
    logger = RunLogger(tmp_path, config.max_timesteps, progress=False)
    algo_config = td3.Config(hidden_sizes=(8,), discount=0.5)
    result = host.train(td3, algo_config, Countdown(time_limit=5), Countdown(), config, logger)
    logger.close()
    replay = result.agent(0).replay
    assert int(replay.size) == 40 - 2  # one row per step, the last two never released
    data = jax.device_get(replay.data)
    size = int(replay.size)
    left = np.rint(data.obs[:size, 0] * 5).astype(int)  # steps left in the episode: 5..1
    m = np.minimum(left, 3)  # rewards summed before the window or the episode ends
    np.testing.assert_allclose(data.reward[:size], (1 - 0.5**m) / (1 - 0.5), rtol=1e-6)
    np.testing.assert_allclose(data.discount[:size], 0.5 ** (m - 1), rtol=1e-6)
    np.testing.assert_allclose(data.next_obs[:size, 0], (left - m) / 5, atol=1e-6)
    np.testing.assert_array_equal(data.next_obs[:size, 1], data.obs[:size, 1])  # same episode


@pytest.mark.parametrize(
    "loop, message",
    [
        ({"n_step": 0}, "n_step must be a positive integer"),
        ({"n_step": 5, "start_timesteps": 10, "batch_size": 8}, r"batch_size \+ n_step - 1 \(12\)"),
    ],
)
def test_bad_n_step_is_refused(loop, message):
    with pytest.raises(ValueError, match=message):
        host.HostLoopConfig(**loop)
