"""`--updates_per_step U` on the host loop: U updates per decision, each on a batch of its
own drawn with the agent's next key, the action taken after the last; recorded, resumed
bitwise, refused when bad."""

import json

import jax
import numpy as np
import pytest
from kill_and_resume import assert_resumes_bitwise

from jax_rl.algos import td3
from jax_rl.core import replay as replay_lib
from jax_rl.core.transition import Transition
from jax_rl.loops import host

from .test_action_repeat import run

SMALL = (16, 16)


def filled(fns):
    """A one-agent TD3 learner (obs 3, action 2) whose buffer holds 12 distinct rows."""
    learner = host.init_population(td3, [td3.Config(hidden_sizes=SMALL)], [0], 3, 2, 64, 8)
    rng = np.random.default_rng(0)
    for _ in range(12):
        obs = rng.normal(size=(1, 3)).astype(np.float32)
        action = rng.uniform(-1, 1, size=(1, 2)).astype(np.float32)
        row = Transition(obs, action, rng.normal(size=1), np.ones(1), obs + 0.1)
        learner = fns.collect(learner, row)
    return learner, row


def copy(learner):
    """A copy the step functions may donate without deleting `learner`."""
    return jax.tree_util.tree_map(lambda x: x.copy(), learner)


def by_hand(learner, updates: int, obs: np.ndarray):
    """What `learn` must compute after its insert: `updates` times (split the agent's key
    into next, sample, update and act keys; draw rows uniformly; update), then act."""
    one = host.agent_learner(learner, 0)
    agent, key = one.agent, one.key
    for _ in range(updates):
        key, sample_key, update_key, act_key = jax.random.split(key, 4)
        rows = replay_lib.sample_rows(sample_key, one.replay.size, 8)
        batch = jax.tree_util.tree_map(lambda x: x[rows], one.replay.data)
        agent, _ = td3.update(agent, batch, update_key)
    action = td3.act(agent, obs, act_key, deterministic=False)
    return agent, action[0]


@pytest.mark.parametrize("updates", [1, 3])
def test_learn_makes_u_updates_on_batches_of_their_own_then_acts(updates):
    fns = host.make_step_functions(td3, batch_size=8, updates_per_step=updates)
    learner, row = filled(fns)
    collected = fns.collect(copy(learner), row)  # what learn does before its updates
    expected_agent, expected_action = by_hand(collected, updates, row.next_obs)
    learner, action = fns.learn(learner, row, row.next_obs)
    one = host.agent_learner(learner, 0)
    assert int(one.num_updates) == updates  # train.csv averages over U per decision
    leaves = jax.tree_util.tree_leaves(one.agent.critic_params)
    expected = jax.tree_util.tree_leaves(expected_agent.critic_params)
    for got, want in zip(leaves, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(action[0], expected_action, rtol=2e-5, atol=1e-6)


def test_three_updates_are_not_one():
    """The check above can tell U = 3 from U = 1 (its tolerance is far below the gap)."""
    fns = host.make_step_functions(td3, batch_size=8, updates_per_step=1)
    learner, row = filled(fns)
    one_agent, _ = by_hand(fns.collect(copy(learner), row), 1, row.next_obs)
    three_agent, _ = by_hand(fns.collect(learner, row), 3, row.next_obs)
    gap = max(
        float(np.max(np.abs(a - b)))
        for a, b in zip(
            jax.tree_util.tree_leaves(one_agent.critic_params),
            jax.tree_util.tree_leaves(three_agent.critic_params),
            strict=True,
        )
    )
    assert gap > 1e-4  # two more Adam steps of 3e-4 each; the tolerance is ~3e-6


FLAGS = (
    "--policy", "TD3", "--max_timesteps", "300", "--start_timesteps", "100",
    "--batch_size", "32", "--hidden_sizes", "32,32", "--eval_freq", "150",
    "--eval_episodes", "1", "--log_freq", "100", "--no_progress", "--action_repeat", "2",
    "--updates_per_step", "2", "--checkpoint_every", "100",
)  # fmt: skip


def test_entry_point_records_u_and_resumes_bitwise(tmp_path):
    reference = tmp_path / "reference"
    result = run(*FLAGS, "--save_dir", str(reference))
    assert result.returncode == 0, result.stderr
    config = json.loads((reference / "config.json").read_text())
    assert config["loop"]["updates_per_step"] == 2 and config["flags"]["updates_per_step"] == 2
    assert_resumes_bitwise(run, FLAGS, tmp_path / "run", 200, reference)


@pytest.mark.parametrize(
    "value, message",
    [
        ("0", "updates_per_step must be a positive integer, got 0"),
        ("-2", "updates_per_step must be a positive integer, got -2"),
        ("1.5", "argument --updates_per_step: invalid int value: '1.5' (see --help)"),
    ],
)
def test_bad_values_exit_2_with_one_line(value, message):
    result = run("--updates_per_step", value)
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: {message}"
