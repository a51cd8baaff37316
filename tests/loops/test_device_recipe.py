"""The accelerator-scale recipe on the device pipeline, at a CPU's size: a categorical
critic with observation normalisation and per-environment exploration stds learns; an
asymmetric actor-critic on a dict-observing task sees what it should and learns."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_rl.algos import sac, td3
from jax_rl.envs.point_mass import point_mass_env
from jax_rl.io.logger import RunLogger
from jax_rl.loops import device

LOOP = dict(
    max_timesteps=8192,
    num_envs=16,
    updates_per_step=16,
    batch_size=128,
    start_timesteps=1024,
    eval_freq=4096,
    eval_episodes=16,
    log_freq=1024,
    episode_length=50,
)
RECIPE = dict(
    hidden_sizes=(32, 32),
    critic_hidden_sizes=(64, 64),
    critic="categorical",
    num_atoms=21,
    v_min=-50.0,
    v_max=0.0,
    normalize_obs=True,
    weight_decay=1e-4,
)


def _train(algo, config, env, out):
    loop = device.DeviceLoopConfig(**LOOP)
    logger = RunLogger(out, loop.total_steps, progress=False)
    try:
        return device.train(algo, config, env, loop, logger)
    finally:
        logger.close()


def _random_return(result):
    keys = jax.random.key(5)[None]
    return float(result.pipeline.evaluate(result.carry.agent, keys, jnp.bool_(True)).mean())


@pytest.fixture(scope="module")
def categorical_td3(tmp_path_factory):
    config = td3.Config(**RECIPE, exploration_noise=0.4, exploration_noise_min=0.05)
    return _train(td3, config, point_mass_env(episode_length=50), tmp_path_factory.mktemp("c"))


def test_categorical_normalised_td3_learns(categorical_td3):
    final = categorical_td3.evaluations[0][-1]["return_mean"]
    # Holding the mass at the origin costs little; random pushes cost several times more.
    random = _random_return(categorical_td3)
    assert final > 0.5 * random, (final, random)
    assert categorical_td3.pipeline.train_chunk._cache_size() == 1


def test_statistics_count_every_collected_observation(categorical_td3):
    stats = categorical_td3.agent(0).agent.obs_stats
    assert float(stats.count) == LOOP["max_timesteps"]
    # The velocity (feature 1) starts at 0 and stays small: its variance is far below
    # the position's, uniform in [-1, 1] at every reset.
    variance = np.asarray(stats.m2) / float(stats.count)
    assert variance[1] < variance[0]


def test_episode_draws_are_uniform_and_renewed_per_episode(categorical_td3):
    draw = np.asarray(categorical_td3.carry.episode_draw)[0]
    assert draw.shape == (LOOP["num_envs"],)
    assert ((0 <= draw) & (draw < 1)).all() and len(np.unique(draw)) == len(draw)


def test_td3_explores_with_the_std_drawn_for_each_environment():
    state = td3.init(
        jax.random.key(0), 2, 1, td3.Config(exploration_noise=0.4, exploration_noise_min=0.1)
    )
    obs, noise = jnp.zeros((3, 2)), jnp.full((3, 1), 0.5)
    draw = jnp.array([0.0, 0.5, 1.0])
    greedy = td3.act(state, obs, jax.random.key(1), True)
    explored = td3.act(state, obs, jax.random.key(1), False, noise=noise, episode_draw=draw)
    # std_b = 0.1 + draw_b * (0.4 - 0.1): 0.1, 0.25, 0.4, times the noise 0.5.
    np.testing.assert_allclose(explored - greedy, [[0.05], [0.125], [0.2]], rtol=1e-5)
    plain = td3.act(
        state.replace(config=state.config.replace(exploration_noise_min=0.0)),
        obs,
        jax.random.key(1),
        False,
        noise=noise,
        episode_draw=draw,
    )
    np.testing.assert_allclose(plain - greedy, 0.2, rtol=1e-5)


@pytest.mark.parametrize("algo", [td3, sac], ids=["TD3", "SAC"])
def test_asymmetric_actor_sees_the_state_and_critics_the_privileged_state(algo, tmp_path):
    env = point_mass_env(episode_length=50, privileged=True)
    assert (env.obs_size, env.actor_obs_size) == (3, 1)  # [x | x, v]
    config = algo.Config(hidden_sizes=(32, 32), normalize_obs=True, actor_obs_size=1)
    result = _train(algo, config, env, tmp_path)
    agent = result.agent(0).agent
    actor_in = agent.actor_params["params"]["MLP_0"]["Dense_0"]["kernel"].shape[0]
    critic_in = agent.critic_params["params"]["members"]["MLP_0"]["Dense_0"]["kernel"].shape[1]
    assert (actor_in, critic_in) == (1, 2 + 1)  # the actor x; the critics x, v and the action
    first, final = result.evaluations[0][0], result.evaluations[0][-1]
    # Without the velocity the actor still learns to push the mass home.
    assert final["return_mean"] > 0.5 * first["return_mean"], (first, final)


def test_device_trainer_tells_the_learner_what_its_actor_sees(monkeypatch):
    from jax_rl.run.trainers import DeviceTrainer

    seen = []

    def fake_train_population(algo, configs, *args):
        seen.extend(configs)
        raise RuntimeError("stop before compiling")

    monkeypatch.setattr(device, "train_population", fake_train_population)
    trainer = DeviceTrainer(point_mass_env(privileged=True))
    with pytest.raises(RuntimeError, match="stop before compiling"):
        trainer.train(td3, [td3.Config()], [0], device.DeviceLoopConfig(), None, None)
    assert [c.actor_obs_size for c in seen] == [1]
