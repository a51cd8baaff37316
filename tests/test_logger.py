"""The progress line: no `train_return=nan` before an episode has ended."""

import math

from jax_rl.io.logger import PopulationLogger, RunLogger


def status(logger) -> dict:
    return dict(logger.top._postfix if isinstance(logger, PopulationLogger) else logger._postfix)


def test_one_run_shows_no_return_until_an_episode_has_ended(tmp_path):
    logger = RunLogger(tmp_path, 100, progress=False)
    logger.log_train(10, {"episode_return": math.nan, "loss/critic": 1.0})
    assert "train_return" not in status(logger)
    logger.log_train(20, {"episode_return": 12.25})
    assert status(logger)["train_return"] == "12.2"
    logger.log_train(30, {"episode_return": math.nan})  # the last return stays shown
    assert status(logger)["train_return"] == "12.2"
    logger.close()


def test_a_population_shows_the_spread_of_the_ended_episodes_only(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    logger = PopulationLogger.create(tmp_path, dirs, 100, progress=False)
    logger.log_train(10, [{"episode_return": math.nan}, {"episode_return": math.nan}])
    assert "train_return" not in status(logger)
    logger.log_train(20, [{"episode_return": 4.0}, {"episode_return": math.nan}])
    assert status(logger)["train_return"] == "4.0+-0.0 [4, 4]"
    logger.close()
