"""Action repeat (`jax_rl.envs.repeat`): rewards summed by hand, episode ends inside a
repeat, frames counted, the checks."""

from typing import Any

import numpy as np
import pytest

from jax_rl.envs import EnvironmentSettingError, HostStep
from jax_rl.envs.repeat import ActionRepeat, check_action_repeat, repeat_actions


class Scripted:
    """Frame t (from 1) pays `rewards[t - 1]` and observes [t, the last action]; the episode
    ends at a true terminal at frame `terminal_at`, or by time limit at `time_limit`."""

    obs_size, action_size = 2, 1

    def __init__(self, rewards, time_limit=100, terminal_at=None) -> None:
        self.rewards, self.time_limit, self.terminal_at = rewards, time_limit, terminal_at
        self.episode_frames = float(time_limit)
        self.name = "scripted"
        self.t = 0
        self.actions: list[float] = []

    def reset(self) -> np.ndarray:
        self.t = 0
        return np.zeros(2, np.float32)

    def step(self, action: np.ndarray) -> HostStep:
        self.t += 1
        self.actions.append(float(action[0]))
        terminal = self.t == self.terminal_at
        obs = np.array([self.t, action[0]], np.float32)
        last = terminal or self.t == self.time_limit
        return HostStep(obs, self.rewards[self.t - 1], 0.0 if terminal else 1.0, last)

    def get_state(self) -> dict[str, Any]:
        return {"t": self.t}

    def set_state(self, state: dict[str, Any]) -> None:
        self.t = state["t"]


def test_three_frames_sum_their_rewards_and_hold_the_action():
    env = ActionRepeat(Scripted([0.5, 0.25, 2.0, 7.0, 1.0, 1.0]), 3)
    env.reset()
    first = env.step(np.array([0.3], np.float32))
    assert first.reward == 0.5 + 0.25 + 2.0
    assert (first.frames, first.discount, first.last) == (3, 1.0, False)
    np.testing.assert_array_equal(first.next_obs, np.float32([3.0, 0.3]))  # the third frame's
    second = env.step(np.array([-0.6], np.float32))
    assert second.reward == 7.0 + 1.0 + 1.0 and second.frames == 3
    assert env.actions == pytest.approx([0.3, 0.3, 0.3, -0.6, -0.6, -0.6])


def test_a_time_limit_inside_a_repeat_ends_the_episode_with_discount_one_there():
    env = ActionRepeat(Scripted([1.0] * 5, time_limit=5), 3)
    env.reset()
    assert env.step(np.zeros(1, np.float32)).frames == 3
    end = env.step(np.array([0.9], np.float32))
    # Two frames left in the episode: the repeat stops at the limit, bootstrapping from
    # the true final observation (frame 5's), not from a reset; the decision counts 3.
    assert (end.frames, end.reward, end.discount, end.last) == (3, 2.0, 1.0, True)
    assert env.env.t == 5
    np.testing.assert_array_equal(end.next_obs, np.float32([5.0, 0.9]))


def test_a_terminal_inside_a_repeat_ends_the_episode_with_discount_zero():
    env = ActionRepeat(Scripted([1.0, 3.0, 100.0], terminal_at=2), 3)
    env.reset()
    end = env.step(np.zeros(1, np.float32))
    assert (end.frames, end.reward, end.discount, end.last) == (3, 4.0, 0.0, True)
    assert env.t == 2  # no frame stepped past the terminal


def test_the_state_is_the_wrapped_environments():
    inner = Scripted([1.0] * 10)
    env = ActionRepeat(inner, 2)
    env.reset()
    env.step(np.zeros(1, np.float32))
    assert env.get_state() == {"t": 2}
    env.set_state({"t": 6})
    assert inner.t == 6 and env.obs_size == 2 and env.name == "scripted"


@pytest.mark.parametrize(
    "repeat, message",
    [
        (0, "must be a positive integer, got 0"),
        (-2, "must be a positive integer, got -2"),
        (2.5, "must be a positive integer, got 2.5"),
        (True, "must be a positive integer, got True"),
        (101, "longer than an episode of scripted \\(100 frames\\)"),
    ],
)
def test_bad_repeats_are_refused(repeat, message):
    with pytest.raises(EnvironmentSettingError, match=message):
        ActionRepeat(Scripted([1.0]), repeat)


def test_one_frame_is_the_environment_itself_and_no_limit_takes_any_repeat():
    env = Scripted([1.0])
    assert repeat_actions(env, 1) is env
    check_action_repeat(1000, None, "unbounded")
    check_action_repeat(1000, float("inf"), "unbounded")
