import logging
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_rl import algos
from jax_rl.algos import mpo, sac, td3
from jax_rl.core.noise import ColoredNoise
from jax_rl.core.transition import Transition
from jax_rl.envs.point_mass import point_mass_env
from jax_rl.envs.probes import ContextualBandit, Countdown
from jax_rl.io.logger import RunLogger
from jax_rl.loops import device, host
from jax_rl.loops.common import pull_metrics, zero_metrics

SMALL = (32, 32)


def run(algo, env, tmp_path, eval_env, hidden=SMALL, **loop):
    loop = {
        "max_timesteps": 60,
        "start_timesteps": 20,
        "batch_size": 8,
        "eval_freq": 1000,
        "eval_episodes": 2,
        "log_freq": 10,
        **loop,
    }
    config = host.HostLoopConfig(**loop)
    logger = RunLogger(tmp_path, config.max_timesteps, progress=False)
    result = host.train(algo, algo.Config(hidden_sizes=hidden), env, eval_env, config, logger)
    logger.close()
    return result


@pytest.mark.parametrize("algo", [td3, sac], ids=["TD3", "SAC"])
def test_step_functions_compile_once_over_many_steps(algo, tmp_path):
    result = run(
        algo,
        Countdown(time_limit=7),
        tmp_path,
        Countdown(),
        max_timesteps=120,
        log_freq=10,
        eval_freq=40,
    )
    fns = result.step_functions
    # 100 learning steps, 10 metric pulls and 4 evaluations later: one program each.
    assert fns.learn._cache_size() == 1
    assert fns.collect._cache_size() == 1
    assert fns.act_deterministic._cache_size() == 1
    assert int(result.agent(0).agent.step) == 120 - 20 + 1


def test_time_limit_is_bootstrapped_through_with_the_true_final_observation(tmp_path):
    result = run(
        td3, Countdown(time_limit=5), tmp_path, Countdown(), max_timesteps=40, start_timesteps=40
    )
    data = jax.device_get(result.agent(0).replay.data)
    assert int(result.agent(0).replay.size) == 40
    final = data.next_obs[:, 0] == 0.0  # steps left 0: the episode ended by time limit
    assert final.sum() == 8
    # Discount 1 at the time limit, and next_obs from the same episode, not a reset.
    np.testing.assert_array_equal(data.discount[final], 1.0)
    np.testing.assert_array_equal(data.next_obs[final, 1], data.obs[final, 1])
    # Consecutive rows chain: each episode's next_obs is the following obs, except at its end.
    np.testing.assert_array_equal(data.obs[1:][~final[:-1]], data.next_obs[:-1][~final[:-1]])


def test_terminal_steps_have_discount_zero(tmp_path):
    result = run(
        td3,
        ContextualBandit(),
        tmp_path,
        ContextualBandit(seed=1),
        max_timesteps=30,
        start_timesteps=30,
    )
    np.testing.assert_array_equal(jax.device_get(result.agent(0).replay.data.discount), 0.0)


def compiled_programs(fn):
    """The names of the programs JAX lowers while fn() runs (jax_log_compiles' records)."""
    names = []

    class Record(logging.Handler):
        def emit(self, record):
            message = record.getMessage()
            if message.startswith("Compiling "):
                names.append(message.split()[1])

    handler, log = Record(), logging.getLogger("jax")
    log.addHandler(handler)
    try:
        with jax.log_compiles(True):
            fn()
    finally:
        log.removeHandler(handler)
    return names


SIMBAV2 = {"actor_network": "simbav2", "critic_network": "simbav2", "hidden_sizes": (8,)}


@pytest.mark.parametrize(
    "algo, settings", [(td3, {"hidden_sizes": (8,)}), (sac, SIMBAV2)], ids=["TD3", "SAC-simbav2"]
)
def test_initialisation_is_one_compiled_program(algo, settings):
    """The initialisers run inside one jitted program. Run eagerly, each of their operations
    compiled on its own (TD3: 133 programs, 25 here).
    SimbaV2's orthogonal initialisers (batched QRs) once hung this program on 2 cores."""
    configs = [algo.Config(**settings)] * 2
    algos.init_compiler_options()  # its one check of the options (a trivial program) is done
    # Sizes no other test uses: nothing of this initialisation is in the process's caches.
    names = compiled_programs(lambda: host.init_population(algo, configs, [0, 1], 11, 7, 96, 8))
    assert names.count("jit(one)") == 1, names
    # Besides it: the keys' creation, stacking and indexing, and the copies that part
    # shared buffers.
    others = {"jit(copy)", "jit(stack)", "jit(stage)", "jit(_threefry_seed)"}
    others |= {"jit(dynamic_slice)", "jit(squeeze)"}
    assert set(names) - {"jit(one)"} <= others, sorted(set(names))


def learner_past_warmup(algo):
    """Step functions and a one-agent learner (obs 3, action 2) whose buffer holds a
    batch, with the constant transition and observation it was filled with."""
    fns = host.make_step_functions(algo, batch_size=8)
    learner = host.init_population(algo, [algo.Config(hidden_sizes=SMALL)], [0], 3, 2, 64, 8)
    obs = np.zeros((1, 3), np.float32)
    row = Transition(obs, np.zeros((1, 2), np.float32), np.zeros(1), np.ones(1), obs)
    for _ in range(8):
        learner = fns.collect(learner, row)
    return fns, learner, row, obs


@pytest.mark.parametrize("algo", [td3, sac, mpo], ids=["TD3", "SAC", "MPO"])
def test_agent_explores_while_collecting(algo):
    """After the warm-up, the action sent to the environment is the exploration
    action, not the deterministic one."""
    fns, learner, row, obs = learner_past_warmup(algo)
    gaps = []
    for _ in range(200):
        learner, action = fns.learn(learner, row, obs)
        agent = host.agent_learner(learner, 0).agent
        gaps.append(np.asarray(action[0]) - np.asarray(fns.act_deterministic(agent, obs[0])))
    spread = np.std(gaps)
    if algo is td3:
        assert 0.07 < spread < 0.13  # exploration_noise 0.1, before clipping
    else:
        assert spread > 0.2


@pytest.mark.parametrize("algo", [td3, sac, mpo], ids=["TD3", "SAC", "MPO"])
def test_given_noise_replaces_the_exploration_draw(algo):
    """Colored noise enters through `learn`'s last argument: zero noise gives the
    deterministic action, and TD3 adds exploration_noise times the given vector."""
    fns, learner, row, obs = learner_past_warmup(algo)
    for noise in (np.zeros((1, 2), np.float32), np.array([[0.5, -1.5]], np.float32)):
        learner, action = fns.learn(learner, row, obs, noise)
        agent = host.agent_learner(learner, 0).agent
        deterministic = np.clip(np.asarray(fns.act_deterministic(agent, obs[0])), -1, 1)
        assert np.all(np.abs(deterministic) < 0.8)  # so no sample below is clipped
        if not noise.any():
            np.testing.assert_allclose(action[0], deterministic, atol=1e-6)
        elif algo is td3:
            np.testing.assert_allclose(action[0], deterministic + 0.1 * noise[0], atol=1e-6)
        else:  # the noise moves the sample the way it points
            assert np.all(np.sign(np.asarray(action[0]) - deterministic) == np.sign(noise[0]))


class RecordingSteps:
    """Step functions that learn nothing and record the noise `learn` is given."""

    def __init__(self):
        self.noise = []

    def functions(self):
        def learn(learner, transitions, act_obs, act_noise=None):
            self.noise.append(act_noise)
            return learner, np.zeros((act_obs.shape[0], 1), np.float32)

        return host.StepFunctions(
            collect=lambda learner, transitions: learner, learn=learn, act_deterministic=None
        )


def test_colored_noise_follows_the_episodes():
    """Agent i's noise is its own colored sequence, started afresh with every episode:
    the action at step t of an episode takes row t of that episode's sequence."""
    steps = RecordingSteps()
    seeds = [0, 7]
    envs = [Countdown(time_limit=6), Countdown(time_limit=6)]
    collector = host.Collector(envs, steps.functions(), None, 10, seeds, noise_color=1.0)
    for _ in range(40):
        collector.step()
    given = np.stack(steps.noise)  # [31, P, A]: the actions of steps 10..40 (from 0)
    assert given.shape == (31, 2, 1)
    for i, seed in enumerate(seeds):
        expected = ColoredNoise(1.0, 1, seed)
        # The first learned action (step 10's, the 5th of an episode) starts a
        # sequence; every later episode (from step 12 on, 6 steps each) starts one.
        rows = [expected.next() for _ in range(2)]
        for _ in range(5):
            expected.reset()
            rows += [expected.next() for _ in range(6)]
        np.testing.assert_array_equal(given[:, i], np.stack(rows[:31]))
    assert not np.allclose(given[:, 0], given[:, 1])


def test_white_noise_gives_learn_no_noise():
    steps = RecordingSteps()
    collector = host.Collector([Countdown()], steps.functions(), None, 10, [0])
    for _ in range(12):
        collector.step()
    assert steps.noise == [None, None, None]  # the actions of steps 10, 11 and 12


def test_warmup_actions_are_uniform(tmp_path):
    result = run(
        td3,
        ContextualBandit(action_size=1),
        tmp_path,
        ContextualBandit(action_size=1),
        max_timesteps=2000,
        start_timesteps=2000,
        log_freq=1000,
    )
    actions = jax.device_get(result.agent(0).replay.data.action)[:, 0]
    assert actions.min() < -0.95 and actions.max() > 0.95
    assert abs(actions.mean()) < 0.05 and abs(actions.std() - 1 / np.sqrt(3)) < 0.02


def random_return(env, episodes=500, seed=0):
    rng = np.random.default_rng(seed)
    total = 0.0
    for _ in range(episodes):
        env.reset()
        total += env.step(rng.uniform(-1, 1, env.action_size)).reward
    return total / episodes


@pytest.mark.parametrize("algo", [td3, sac, mpo], ids=["TD3", "SAC", "MPO"])
def test_short_run_learns_the_contextual_bandit(algo, tmp_path):
    """A broken learner or loop fails this: the optimal return is 0, random is about -1.5."""
    env, eval_env = ContextualBandit(seed=0), ContextualBandit(seed=1)
    baseline = random_return(ContextualBandit(seed=2))
    result = run(
        algo,
        env,
        tmp_path,
        eval_env,
        hidden=(64, 64),
        max_timesteps=1500,
        start_timesteps=200,
        batch_size=64,
        eval_freq=1500,
        eval_episodes=200,
        log_freq=500,
    )
    final = result.evaluations[0][-1]["return_mean"]
    assert baseline < -1.0
    assert final > -0.1, f"final return {final:.3f} (random {baseline:.3f})"


def test_metrics_are_averaged_and_written(tmp_path):
    run(sac, Countdown(), tmp_path, Countdown(), max_timesteps=60, log_freq=20)
    lines = (tmp_path / "train.csv").read_text().splitlines()
    header = lines[0].split(",")
    assert header[:2] == ["step", "wall_time"] and "loss/critic" in header
    assert [line.split(",")[0] for line in lines[1:]] == ["20", "40", "60"]
    evals = (tmp_path / "evaluations.csv").read_text().splitlines()
    assert evals[0] == "step,wall_time,return_mean,return_std"
    assert [line.split(",")[0] for line in evals[1:]] == ["0", "60"]


@pytest.mark.parametrize(
    "loop, message",
    [
        ({"batch_size": 0}, "batch_size must be a positive integer"),
        ({"start_timesteps": 10, "batch_size": 32}, "must be at least batch_size"),
        ({"start_timesteps": 500, "max_timesteps": 100}, "would never learn"),
        ({"replay_size": 16, "batch_size": 32, "start_timesteps": 32}, "replay_size"),
        ({"noise_color": -1.0}, "noise_color must be a finite number >= 0"),
        ({"noise_color": float("nan")}, "noise_color must be a finite number >= 0"),
    ],
)
def test_loop_config_rejects_bad_values(loop, message):
    with pytest.raises(ValueError, match=message):
        host.HostLoopConfig(**loop)


def test_metric_sums_reset_without_recompiling():
    fns = host.make_step_functions(td3, batch_size=4)
    learner = host.init_population(td3, [td3.Config(hidden_sizes=(8,))], [0], 2, 1, 16, 4)
    obs = np.zeros((1, 2), np.float32)
    row = Transition(obs, np.zeros((1, 1), np.float32), np.ones(1), np.ones(1), obs)
    for _ in range(4):
        learner, _ = fns.learn(learner, row, obs)
    learner, rows = pull_metrics(learner)
    assert int(learner.num_updates) == 0 and float(learner.metric_sums["loss/critic"][0]) == 0.0
    assert len(rows) == 1 and np.isfinite(rows[0]["loss/critic"])
    learner, _ = fns.learn(learner, row, obs)
    assert fns.learn._cache_size() == 1


def test_learn_compiles_with_the_learners_compiler_options(monkeypatch):
    """The loop's learning call is compiled with `algos.compiler_options` of its learner
    (MPO's CPU fusion choice): an option XLA lacks, handed in there, reaches XLA."""
    asked = []

    def options(algo):
        asked.append(algo)
        return {"xla_cpu_no_such_option": "1"}

    monkeypatch.setattr(host.algos, "compiler_options", options)
    fns, learner, row, obs = learner_past_warmup(mpo)
    assert asked == [mpo]
    with pytest.raises(Exception, match="xla_cpu_no_such_option"):
        fns.learn(learner, row, obs)


def test_initialisation_compiles_unoptimised_on_a_cpu_to_the_same_values(monkeypatch):
    """Both loops initialise their learners with `algos.init_compiler_options`: on a CPU,
    XLA's backend optimisations off. The values are an optimised compilation's to a few
    ulps, and the options reach XLA (one it lacks is refused there)."""
    assert algos.init_compiler_options() == {"xla_backend_optimization_level": "0"}
    configs = [sac.Config(hidden_sizes=(16, 16))]
    args = (sac, configs, [3], 2, 1, 64, 8)
    unoptimised = host.init_population(*args)
    monkeypatch.setattr(algos, "init_compiler_options", lambda: None)
    optimised = host.init_population(*args)
    leaves = [jax.tree_util.tree_leaves(s.agent) for s in (unoptimised, optimised)]
    pairs = zip(*leaves, strict=True)
    for x, y in pairs:
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            x, y = jax.random.key_data(x), jax.random.key_data(y)
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-6, atol=1e-7)
    monkeypatch.setattr(algos, "init_compiler_options", lambda: {"xla_cpu_no_such": "1"})
    with pytest.raises(Exception, match="xla_cpu_no_such"):
        host.init_population(*args)
    loop = device.DeviceLoopConfig(max_timesteps=8, num_envs=2, batch_size=2, start_timesteps=8)
    with pytest.raises(Exception, match="xla_cpu_no_such"):
        env = point_mass_env(episode_length=5)
        device.init_population(sac, configs, env, loop, device.agent_keys([0])[0])


def test_metric_shapes_are_traced_once_per_learner_and_abstract_arguments():
    traced = []

    def update(agent, batch, key):
        traced.append(batch.obs.shape)
        return agent, {"loss/critic": jnp.sum(batch.obs), "q": batch.reward.mean(keepdims=True)}

    algo = types.ModuleType("counting")
    algo.update = update

    def batch(rows: int) -> Transition:
        return Transition(
            obs=jnp.ones((rows, 3)), action=jnp.ones((rows, 1)), reward=jnp.ones(rows),
            discount=jnp.ones(rows), next_obs=jnp.ones((rows, 3)),
        )  # fmt: skip

    key = jax.random.key(0)
    first = zero_metrics(algo, {"w": jnp.ones(2)}, batch(4), key)
    again = zero_metrics(algo, {"w": jnp.zeros(2)}, batch(4), key)  # other values, same shapes
    other = zero_metrics(algo, {"w": jnp.ones(2)}, batch(8), key)
    assert traced == [(4, 3), (8, 3)]
    for metrics in (first, again, other):
        assert {k: (v.shape, float(v.sum())) for k, v in metrics.items()} == {
            "loss/critic": ((), 0.0), "q": ((1,), 0.0)
        }  # fmt: skip
