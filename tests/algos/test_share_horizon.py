"""TD targets that shorten as the reward share rises (`share_horizon`, TD3): the windows'
multi-step transitions by hand, the steps each row takes at a given share, TD3's update on
windows against the same update on the hand-made transitions, and the refusals."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_rl.algos import exploration, sac, td3
from jax_rl.core import replay
from jax_rl.core.transition import Transition
from jax_rl.loops import common

SHARE = dict(hold_exploration=True, exploration_share=0.2, share_horizon=3)
GAMMA = 0.9


def hand_window() -> replay.Window:
    """Two starts, 3 rows each: the first stays in its episode, the second's episode ends
    (a terminal, discount 0) at its second row, so its third row is masked."""
    obs = jnp.arange(2 * 3 * 2, dtype=jnp.float32).reshape(2, 3, 2)
    return replay.Window(
        obs=obs,
        action=jnp.asarray([[[0.1], [0.2], [0.3]], [[-0.1], [-0.2], [-0.3]]]),
        reward=jnp.asarray([[1.0, 2.0, 4.0], [3.0, 5.0, 7.0]]),
        discount=jnp.asarray([[1.0, 1.0, 1.0], [1.0, 0.0, 1.0]]),
        next_obs=obs + 100.0,
        mask=jnp.asarray([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]]),
    )


def test_window_transitions_by_hand():
    window = hand_window()
    full = replay.window_transition(window, GAMMA)
    # Row 0: 1 + 0.9 * 2 + 0.81 * 4, bootstrapped from s'_2 with 0.9^2; row 1: 3 + 0.9 * 5,
    # its last step a terminal (discount 0), from s'_1.
    np.testing.assert_allclose(full.reward, [1 + 0.9 * 2 + 0.81 * 4, 3 + 0.9 * 5], rtol=1e-6)
    np.testing.assert_allclose(full.discount, [0.81, 0.0], rtol=1e-6)
    np.testing.assert_array_equal(full.next_obs, [window.next_obs[0, 2], window.next_obs[1, 1]])
    np.testing.assert_array_equal(full.obs, window.obs[:, 0])
    np.testing.assert_array_equal(full.action, window.action[:, 0])
    # At most 1 and 2 steps: row 0 is its one-step transition, row 1 as before.
    cut = replay.window_transition(window, GAMMA, jnp.asarray([1, 2]))
    np.testing.assert_allclose(cut.reward, [1.0, 3 + 0.9 * 5], rtol=1e-6)
    np.testing.assert_allclose(cut.discount, [1.0, 0.0], rtol=1e-6)
    np.testing.assert_array_equal(cut.next_obs, [window.next_obs[0, 0], window.next_obs[1, 1]])


def test_the_steps_fall_from_the_horizon_to_one_as_the_share_is_reached():
    config = td3.Config(**SHARE)
    watch = exploration.init(config)
    steps = lambda share: np.asarray(  # noqa: E731
        exploration.share_steps(config, watch.replace(share=jnp.float32(share)), 8)
    )
    np.testing.assert_array_equal(steps(0.0), [3] * 8)  # n = 3
    np.testing.assert_array_equal(steps(0.1), [2] * 8)  # half the share: n = 2
    np.testing.assert_array_equal(steps(0.05), [3] * 4 + [2] * 4)  # n = 2.5
    np.testing.assert_array_equal(steps(0.15), [2] * 4 + [1] * 4)  # n = 1.5
    np.testing.assert_array_equal(steps(0.2), [1] * 8)
    np.testing.assert_array_equal(steps(0.9), [1] * 8)  # past the share: one step
    assert td3.horizon(config) == 3 and td3.horizon(td3.Config()) == 1


@pytest.mark.parametrize("algo", [td3, sac], ids=["TD3", "SAC"])
def test_on_windows_the_learner_learns_as_on_their_hand_made_transitions(algo):
    # At share ~0 every row takes 3 steps: the critic's update on the windows is the
    # update on the windows' 3-step transitions, given the same watch and key (SAC takes
    # the share for its horizon only).
    config = algo.Config(hidden_sizes=(16,), **SHARE)
    assert algo.horizon(config) == 3 and algo.horizon(algo.Config()) == 1
    state = algo.init(jax.random.key(0), 2, 1, config)
    window = hand_window()
    stepped, metrics = algo.update(state, window, jax.random.key(1))
    assert float(metrics["explore/horizon"]) == 3.0 and "explore/share" in metrics
    g = config.discount
    hand = Transition(
        obs=window.obs[:, 0],
        action=window.action[:, 0],
        reward=jnp.asarray([1 + g * 2 + g**2 * 4, 3 + g * 5]),
        discount=jnp.asarray([g**2, 0.0]),
        next_obs=jnp.stack([window.next_obs[0, 2], window.next_obs[1, 1]]),
    )
    plain = state.replace(config=config.replace(share_horizon=1))
    plain = plain.replace(reward_watch=stepped.reward_watch)  # the watch of the windows' rows
    expected, plain_metrics = algo.update(plain, hand, jax.random.key(1))
    assert "explore/horizon" not in plain_metrics
    for a, b in zip(
        jax.tree_util.tree_leaves(stepped.critic_params),
        jax.tree_util.tree_leaves(expected.critic_params),
        strict=True,
    ):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    # The share is read from every stored row of the windows (5 of 6 above the lowest).
    rate = 1.0 / exploration.SHARE_UPDATES
    assert float(stepped.reward_watch.share) == pytest.approx(5 / 6 * rate, rel=1e-5)


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"share_horizon": 0}, "share_horizon must be a positive integer"),
        ({"share_horizon": 3}, "give --hold_exploration and --exploration_share too"),
        (
            {"share_horizon": 3, "hold_exploration": True, "exploration_decay": 100},
            "give --hold_exploration and --exploration_share too",
        ),
        ({**SHARE, "representation": "mrq"}, "representation mrq forms its own"),
    ],
)
def test_share_horizon_refuses_what_it_cannot_run(fields, words):
    with pytest.raises(ValueError, match=words):
        td3.Config(**fields)


def test_loops_refuse_the_share_horizon_where_they_cannot_hand_out_windows():
    config = td3.Config(**SHARE)
    with pytest.raises(ValueError, match="share_horizon trains on .* device pipeline does not"):
        common.check_learner(td3, config, None)
    with pytest.raises(ValueError, match="share_horizon forms .* n_step must be 1, got 3"):
        common.check_learner(td3, config, 3)
    common.check_learner(td3, td3.Config(**{**SHARE, "share_horizon": 1}), None)


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"exploration_share": 0.1}, "SAC exploration_share .* give hold_exploration too"),
        ({"exploration_share": 2.0, "hold_exploration": True}, r"must be in \[0, 1\]"),
        ({"share_horizon": 3}, "SAC share_horizon shortens"),
    ],
)
def test_sac_refuses_a_share_it_cannot_keep(fields, words):
    with pytest.raises(ValueError, match=words):
        sac.Config(**fields)
