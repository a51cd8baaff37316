import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_rl.algos import sac, td3
from jax_rl.envs.brax import BraxEnv
from jax_rl.envs.point_mass import point_mass_env
from jax_rl.io.logger import RunLogger
from jax_rl.loops import device
from jax_rl.loops.nstep import n_step_transition

from .test_host import compiled_programs

# Small enough to compile and run in well under a minute per learner on 2 cores.
LOOP = dict(
    max_timesteps=6144,
    num_envs=16,
    updates_per_step=32,
    batch_size=64,
    start_timesteps=512,
    eval_freq=3072,
    eval_episodes=16,
    log_freq=512,
    episode_length=100,
)


@pytest.fixture(scope="module", params=[td3, sac], ids=["TD3", "SAC"])
def trained(request, tmp_path_factory):
    algo = request.param
    env = point_mass_env(episode_length=LOOP["episode_length"])
    config = device.DeviceLoopConfig(**LOOP)
    out = tmp_path_factory.mktemp(algo.__name__.rsplit(".", 1)[-1])
    logger = RunLogger(out, config.total_steps, progress=False)
    result = device.train(algo, algo.Config(hidden_sizes=(64, 64)), env, config, logger)
    logger.close()
    return algo, env, config, result, out


def test_train_chunk_compiles_once_across_chunks(trained):
    _, _, config, result, _ = trained
    assert config.num_chunks == 12
    assert result.pipeline.train_chunk._cache_size() == 1
    assert result.pipeline.evaluate._cache_size() == 1


def test_counters_add_up(trained):
    _, _, config, result, out = trained
    carry = result.carry
    assert int(carry.env_steps) == config.total_steps == 6144
    # Updates start once the buffer holds start_timesteps transitions.
    learning_iterations = (config.total_steps - config.start_timesteps) // config.num_envs + 1
    assert int(carry.updates) == learning_iterations * config.updates_per_step
    assert int(carry.replay.size) == config.total_steps  # capacity = max_timesteps
    rows = (out / "train.csv").read_text().splitlines()
    header = rows[0].split(",")
    last = dict(zip(header, rows[-1].split(","), strict=True))
    assert int(last["updates"]) == int(carry.updates)
    ratio = int(carry.updates) * config.batch_size / config.total_steps
    assert float(last["replay_ratio"]) == pytest.approx(ratio, rel=1e-4)


def test_short_run_improves_over_random(trained):
    algo, env, config, result, _ = trained
    keys = jax.random.key(9)[None]
    random = jax.device_get(
        result.pipeline.evaluate(result.carry.agent, keys, jnp.bool_(True))
    ).mean()
    final = result.evaluations[0][-1]["return_mean"]
    # The point mass costs -x^2 a step: the trained policies bring it to the origin and
    # hold it there (about -1.7 over the 100 steps), random pushes cost about -36.
    assert final > 0.2 * random and final > random + 20, (final, random)


def test_evaluation_rows_are_written(trained):
    _, _, _, result, out = trained
    steps = [int(line.split(",")[0]) for line in (out / "evaluations.csv").read_text().split()[1:]]
    assert steps == [0, 3072, 6144]
    assert [int(row["step"]) for row in result.evaluations[0]] == steps


@pytest.mark.parametrize(
    "loop, message",
    [
        ({"num_envs": 0}, "num_envs must be a positive integer"),
        ({"start_timesteps": 32, "batch_size": 64}, "must be at least batch_size"),
        (
            {"replay_size": 8, "num_envs": 16, "batch_size": 8, "start_timesteps": 8},
            "exceeds the replay capacity",
        ),
    ],
)
def test_loop_config_rejects_bad_values(loop, message):
    with pytest.raises(ValueError, match=message):
        device.DeviceLoopConfig(**loop)


def test_rounding_to_whole_chunks():
    config = device.DeviceLoopConfig(
        max_timesteps=1000, num_envs=16, log_freq=100, start_timesteps=256
    )
    assert config.iterations_per_chunk == 6 and config.chunk_steps == 96
    assert config.num_chunks == 11 and config.total_steps == 1056
    assert np.isfinite(config.total_steps)


def test_the_environments_reset_is_compiled_once_for_every_learner():
    # The physics' reset is most of an initialisation's compile time: it is a program of
    # its own, which a second learner (or setting) on the same environment reuses.
    env = BraxEnv("inverted_pendulum", "positional", episode_length=5)
    loop = dict(max_timesteps=32, num_envs=4, updates_per_step=1, batch_size=4)
    config = device.DeviceLoopConfig(**loop, start_timesteps=32, eval_freq=32, episode_length=5)
    keys, _ = device.agent_keys([0])
    carries, names = [], []
    for algo in (td3, sac):
        init = lambda a=algo: carries.append(  # noqa: E731
            device.init_population(a, [a.Config(hidden_sizes=(8,))], env, config, keys)
        )
        names.append([n for n in compiled_programs(init) if n != "jit(copy)"])
    assert "jit(reset_population)" in names[0] and "jit(reset_population)" not in names[1]
    assert "jit(one)" in names[1]  # SAC's own initialisation
    # Both start from the same environment states, as each would on its own.
    np.testing.assert_array_equal(carries[0].env.obs, carries[1].env.obs)
    alone = jax.jit(lambda k: env.reset(k, 4))(jax.random.split(keys[0], 4)[1])
    np.testing.assert_array_equal(carries[1].env.obs[0], alone.obs)


def test_an_evaluation_counts_each_episode_to_its_first_end_without_resets():
    """The evaluation rollout steps without resets (its program holds no physics
    initialisation); its returns are those of stepping with resets and counting each
    environment's rewards until its time limit, 5 of the rollout's 8 steps."""
    env = point_mass_env(episode_length=5)
    config = device.DeviceLoopConfig(eval_episodes=3, episode_length=8)

    def policy(obs: jax.Array, key: jax.Array) -> jax.Array:
        return jax.random.uniform(key, (obs.shape[0], env.action_size), minval=-1.0, maxval=1.0)

    key = jax.random.key(5)
    returns = jax.jit(lambda k: device.rollout_returns(env, config, policy, k))(key)
    reset_key, key = jax.random.split(key)
    state = env.reset(reset_key, 3)
    step = jax.jit(env.step)
    expected, rewards_after = np.zeros(3), 0.0
    for t, step_key in enumerate(jax.random.split(key, 8)):
        state, transition, info = step(state, policy(state.obs, step_key))
        if t < 5:
            expected += np.asarray(transition.reward)
        else:
            rewards_after += float(np.abs(transition.reward).sum())
        assert bool(info.done.all()) == (t == 4)
    assert rewards_after > 0  # steps past the end that must not count
    np.testing.assert_allclose(returns, expected, rtol=1e-6)


def test_n_step_transitions_are_built_from_the_one_step_ones():
    # Uniform warm-up actions throughout, from the same keys: the same trajectories
    # with n = 1 and n = 3. Episodes of 5 steps (or fewer, when the mass passes 0.5).
    env = point_mass_env(episode_length=5, terminate_beyond=0.5)
    loop = dict(max_timesteps=32, num_envs=4, updates_per_step=1, batch_size=4)
    loop.update(start_timesteps=32, eval_freq=32, eval_episodes=1, log_freq=32, episode_length=5)
    data = {}
    for n in (1, 3):
        config = device.DeviceLoopConfig(**loop, n_step=n)
        pipeline = device.make_pipeline(td3, env, config)
        keys, _ = device.agent_keys([0])
        carry = device.init_population(td3, [td3.Config(hidden_sizes=(8,))], env, config, keys)
        carry = pipeline.train_chunk(carry)  # 8 iterations of 4 environments
        replay = jax.device_get(jax.tree_util.tree_map(lambda x: x[0], carry.replay.data))
        data[n] = (replay, int(carry.replay.size), int(carry.replay.position))
    one, size, _ = data[1]
    assert size == 32
    steps = [jax.tree_util.tree_map(lambda x, t=t: x[4 * t : 4 * t + 4], one) for t in range(8)]
    # An episode ended where the next step does not start from this one's next_obs.
    lasts = [~np.all(steps[t].next_obs == steps[t + 1].obs, axis=1) for t in range(7)]
    assert any(last.any() for last in lasts)
    three, size, position = data[3]
    assert size == position == 32 - 2 * 4  # one row per env per iteration, 2 iterations late
    for t in range(6):
        ends = [*lasts[t : t + 2], np.zeros(4, bool)]  # the window's last end does not matter
        want = n_step_transition(steps[t : t + 3], ends, 0.99)
        for field in ("obs", "action", "reward", "discount", "next_obs"):
            got = getattr(three, field)[4 * t : 4 * t + 4]
            np.testing.assert_allclose(got, getattr(want, field), rtol=1e-5, err_msg=field)
