"""Action repeat through the host loop: steps counted in frames, rewards summed into each
stored transition, a population of two, and kill-and-resume through the entry point."""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest
from kill_and_resume import assert_resumes_bitwise, evaluations

from jax_rl.algos import sac, td3
from jax_rl.envs.probes import Countdown
from jax_rl.envs.repeat import ActionRepeat
from jax_rl.io.logger import PopulationLogger
from jax_rl.loops import host

from .test_host_population import assert_close

ROOT = Path(__file__).resolve().parents[2]
LOOP = dict(
    max_timesteps=60, start_timesteps=20, batch_size=8, eval_freq=20, eval_episodes=1,
    log_freq=10, action_repeat=2,
)  # fmt: skip


def countdown(seed: int) -> ActionRepeat:
    """Agent 0's task: a Countdown of 7 frames (decisions of 2, 2, 2 and 1 frame: the time
    limit inside the repeat); the others' of 5 (2, 2, 1), their episodes ending elsewhere."""
    return ActionRepeat(Countdown(time_limit=7 if seed == 0 else 5), 2)


def train(algo, seeds, out: Path, **settings):
    """Agents of `seeds` on their Countdowns, each action held for 2; learner `settings`."""
    config = host.HostLoopConfig(**LOOP)
    dirs = [out] if len(seeds) == 1 else [out / f"agent{i}" for i in range(len(seeds))]
    logger = PopulationLogger.create(out, dirs, config.max_timesteps, progress=False)
    envs = [countdown(seed) for seed in seeds]
    eval_envs = [countdown(seed) for seed in seeds]
    configs = [algo.Config(hidden_sizes=(16, 16), **settings) for _ in seeds]
    try:
        return host.train_population(algo, configs, seeds, envs, eval_envs, config, logger)
    finally:
        logger.close()


def test_steps_are_frames_and_each_transition_sums_its_frames(tmp_path):
    result = train(sac, [0], tmp_path)
    # Every decision counts its 2 frames, the one cut short by the time limit too: 30
    # decisions make the 60 frames, and learning starts with the one reaching 20.
    learner = result.agent(0)
    assert int(learner.replay.size) == 30
    assert int(learner.agent.step) == 30 - 10 + 1
    data = jax.device_get(learner.replay.data)
    size = 30
    rewards = [1.0 if i % 4 == 3 else 2.0 for i in range(size)]  # 7 frames: 2 + 2 + 2 + 1
    np.testing.assert_array_equal(data.reward[:size], rewards)
    # The episode's last decision (one frame, the time limit inside the repeat): discount 1
    # and the true final observation (no steps left, the same episode), not a reset.
    ends = np.arange(size) % 4 == 3
    np.testing.assert_array_equal(data.discount[:size], 1.0)
    np.testing.assert_array_equal(data.next_obs[:size][ends, 0], 0.0)
    np.testing.assert_array_equal(data.next_obs[:size][ends, 1], data.obs[:size][ends, 1])
    # Evaluations and train.csv rows on their multiples of frames; each evaluation over a
    # whole 7-frame episode.
    assert [row["step"] for row in result.evaluations[0]] == [0, 20, 40, 60]
    assert [row["return_mean"] for row in result.evaluations[0]] == [7.0] * 4
    rows = (tmp_path / "train.csv").read_text().splitlines()[1:]
    assert [int(line.split(",")[0]) for line in rows] == list(range(10, 61, 10))


# Countdown pays 1 every frame, so the decisions' rewards are 2, and 1 where the time limit
# cuts a repeat short: they differ, and the parts' state moves. The two agents' episodes
# end at different frames (7 and 5).
@pytest.mark.parametrize(
    "algo, settings",
    [
        (td3, {}),
        (sac, {"hold_exploration": True}),
        (td3, {"hold_exploration": True, "exploration_decay": 10}),
        (sac, {"hold_exploration": True, "alpha_min": 0.9, "alpha_lr": 0.05}),
    ],
    ids=["TD3", "SAC-hold", "TD3-hold", "SAC-floor"],
)
def test_a_population_of_two_trains_as_separate_runs(algo, settings, tmp_path):
    together = train(algo, [0, 1], tmp_path / "population", **settings)
    if settings:
        watch = together.learner.agent.reward_watch
        assert (np.asarray(watch.found_at) >= 0).all() and (np.asarray(watch.informative) > 0).all()
    if "alpha_min" in settings:  # the floor holds each agent's temperature
        alphas = np.exp(np.asarray(together.learner.agent.log_alpha))
        np.testing.assert_allclose(alphas, settings["alpha_min"], rtol=1e-6)
    for i in (0, 1):
        alone = train(algo, [i], tmp_path / f"alone{i}", **settings)
        assert_close(together.agent(i).agent, alone.agent(0).agent)
        assert_close(together.agent(i).replay.data, alone.agent(0).replay.data)
        assert together.evaluations[i] == [
            {**row, "wall_time": mine["wall_time"]}
            for row, mine in zip(alone.evaluations[0], together.evaluations[i], strict=True)
        ]


def test_start_timesteps_counts_the_frames_of_a_full_first_batch():
    with pytest.raises(ValueError, match=r"times action_repeat \(16\)"):
        host.HostLoopConfig(**{**LOOP, "start_timesteps": 15})
    with pytest.raises(ValueError, match="action_repeat must be a positive integer"):
        host.HostLoopConfig(**{**LOOP, "action_repeat": 0})


FLAGS = (
    "--max_timesteps", "300", "--start_timesteps", "100", "--batch_size", "32",
    "--hidden_sizes", "32,32", "--eval_freq", "150", "--eval_episodes", "1",
    "--log_freq", "100", "--no_progress", "--action_repeat", "2", "--checkpoint_every", "100",
)  # fmt: skip
# With the exploration parts (held until a reward on cartpole-swingup's dense rewards: the
# watch is set from the first update and carried in the checkpoint) and pink noise.
LEARNERS = {
    "SAC": ("--policy", "SAC", "--hold_exploration", "--noise_color", "1"),
    "TD3": ("--policy", "TD3", "--hold_exploration", "--exploration_decay", "50"),
    "SAC-floor": ("--policy", "SAC", "--alpha_min", "0.9", "--alpha_lr", "0.01"),
}


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "jax_rl" / "main_dm_control.py"), *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize("policy", LEARNERS)
def test_entry_point_repeats_records_and_resumes_bitwise(policy, tmp_path):
    flags = (*FLAGS, *LEARNERS[policy])
    reference = tmp_path / "reference"
    result = run(*flags, "--save_dir", str(reference))
    assert result.returncode == 0, result.stderr
    assert "each action held for 2 frames" in result.stderr
    config = json.loads((reference / "config.json").read_text())
    assert config["loop"]["action_repeat"] == 2 and config["flags"]["action_repeat"] == 2
    assert config["algo"]["hold_exploration"] is ("floor" not in policy)
    # Frames: evaluations at 0, 150 and 300 of dm_control's 1000-frame episodes.
    assert [row[0] for row in evaluations(reference)] == ["0", "150", "300"]
    train_csv = (reference / "train.csv").read_text().splitlines()
    assert ("explore/reward_found" in train_csv[0]) is ("floor" not in policy)
    if "floor" in policy:
        assert config["algo"]["alpha_min"] == 0.9
    assert_resumes_bitwise(run, flags, tmp_path / "run", 200, reference)


@pytest.mark.parametrize(
    "value, message",
    [
        ("0", "action_repeat must be a positive integer, got 0"),
        ("-3", "action_repeat must be a positive integer, got -3"),
        ("1.5", "argument --action_repeat: invalid int value: '1.5'"),
        ("1001", "action_repeat 1001 is longer than an episode of cartpole-swingup (1000 frames)"),
    ],
)
def test_bad_repeats_exit_2_with_one_line(value, message):
    result = run(
        "--action_repeat", value, "--max_timesteps", "600000", "--start_timesteps", "300000"
    )
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: {message}" + " (see --help)" * ("invalid" in message)


def test_python_door_takes_the_repeat_and_refuses_a_bad_one():
    import jax_rl

    with pytest.raises(ValueError, match="action_repeat must be a positive integer, got 0"):
        jax_rl.train("SAC", "dm_control/cartpole-swingup", action_repeat=0, progress=False)
    with pytest.raises(ValueError, match="longer than an episode of Hopper-v5"):
        jax_rl.train("SAC", "gymnasium/Hopper-v5", action_repeat=5000, progress=False)


class Drawn(Countdown):
    """A Countdown that draws a blank frame."""

    def render(self) -> np.ndarray:
        return np.zeros((8, 8, 3), np.uint8)


def test_a_played_episode_counts_frames_and_draws_every_second_frame():
    from jax_rl.run import play

    agent = td3.init(jax.random.key(0), 2, 1, td3.Config(hidden_sizes=(8,)))
    recording = play.Recording(size=(8, 8), every=2)
    plain = play.HostPlayer(td3, Drawn(time_limit=7)).play(agent, 1, recording)[0]
    held = play.HostPlayer(td3, ActionRepeat(Drawn(time_limit=7), 2)).play(agent, 1, recording)[0]
    # Plain: 7 frames, drawn at the start and at frames 2, 4 and 6. Held: 4 decisions of 2
    # frames (the last cut to 1 by the time limit, counted 2), one drawing after each.
    assert (plain.steps, plain.episode_return, len(plain.frames)) == (7, 7.0, 4)
    assert (held.steps, held.episode_return, len(held.frames)) == (8, 7.0, 5)


def test_td3_held_without_a_schedule_exits_2_with_one_line():
    # The published settings (TD3's own entry on cartpole-swingup holds with a schedule).
    result = run("--policy", "TD3", "--preset", "paper", "--hold_exploration")
    assert result.returncode == 2
    assert result.stderr.strip().startswith("error: TD3 hold_exploration anneals")
    assert len(result.stderr.strip().splitlines()) == 1
