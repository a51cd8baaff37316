"""A sparse probe (`SparseReach`: a reward only beyond x = 0.6, about 30 per episode for
pushing right): the exploration parts (held, pink) find and learn it in a short run; the
same learners exploring with white noise, as published, find nothing.

What decides it here is the noise's color: pink noise without the hold also finds this
probe (SAC 27, TD3 with its std scheduled from 1.0: 28, at 3,000 steps), since it meets the
reward within a few hundred steps, before a temperature or a schedule has fallen. The hold
is tested by hand (tests/algos/test_exploration.py) and on cartpole-swingup_sparse, where
the first reward comes after 20k frames (docs/exploration.md)."""

import pytest

from jax_rl.algos import sac, td3
from jax_rl.envs.probes import SparseReach
from jax_rl.io.logger import RunLogger
from jax_rl.loops import host

# The dm_control entry's critic recipe (CrossQ: BatchRenorm, no targets, lr 1e-3, beta1 0.5,
# policy delay 3) at a probe's size.
CROSSQ = {
    "hidden_sizes": (64, 64), "crossq": True, "policy_freq": 3, "adam_beta1": 0.5,
    "actor_lr": 1e-3, "critic_lr": 1e-3,
}  # fmt: skip
EXPLORING = {
    "SAC": (sac, {**CROSSQ, "alpha_lr": 1e-3, "hold_exploration": True}),
    "TD3": (td3, {**CROSSQ, "hold_exploration": True, "initial_exploration_noise": 1.0,
                  "exploration_decay": 2000}),
}  # fmt: skip
WHITE = {"SAC": (sac, {**CROSSQ, "alpha_lr": 1e-3}), "TD3": (td3, CROSSQ)}


def final_returns(algo, settings, noise_color, tmp_path):
    loop = host.HostLoopConfig(
        max_timesteps=3000, start_timesteps=500, batch_size=64, eval_freq=1500,
        eval_episodes=2, log_freq=500, noise_color=noise_color,
    )  # fmt: skip
    logger = RunLogger(tmp_path, loop.max_timesteps, progress=False)
    result = host.train(algo, algo.Config(**settings), SparseReach(), SparseReach(), loop, logger)
    logger.close()
    return [row["return_mean"] for row in result.evaluations[0]]


@pytest.mark.parametrize("learner", ["SAC", "TD3"])
def test_pink_exploration_finds_the_sparse_reward_and_white_noise_does_not(learner, tmp_path):
    algo, settings = EXPLORING[learner]
    found = final_returns(algo, settings, 1.0, tmp_path / "exploring")
    assert found[0] == 0.0 and found[-1] > 15.0, found
    algo, settings = WHITE[learner]
    assert final_returns(algo, settings, 0.0, tmp_path / "white") == [0.0, 0.0, 0.0]
