"""The Gymnasium adapter: episode ends, seeding, exact state round trips, refusals."""

import json
import pathlib
from types import SimpleNamespace

import gymnasium
import numpy as np
import pytest

from jax_rl.algos import sac
from jax_rl.envs import UnknownEnvironmentError
from jax_rl.envs.gymnasium import GymnasiumEnv, check_env, mujoco_ids
from jax_rl.io.logger import RunLogger
from jax_rl.loops import host

MUJOCO_V5 = [env_id for env_id in mujoco_ids() if env_id.endswith("-v5")]


def stored_transitions(env: GymnasiumEnv, steps: int, seed: int = 0) -> list:
    """The transitions the host loop stores over `steps` uniform random warm-up steps
    (its Collector, with a replay that only records: no learner, nothing compiled)."""
    stored: list = []

    def collect(learner, transition):
        stored.append(transition)
        return learner

    fns = SimpleNamespace(collect=collect)
    collector = host.Collector([env], fns, None, start_timesteps=steps + 1, seeds=[seed])
    for _ in range(steps):
        collector.step()
    fields = ("obs", "action", "reward", "discount", "next_obs")
    return [{f: np.asarray(getattr(t, f))[0] for f in fields} for t in stored]


def test_observations_are_flat_float32():
    env = GymnasiumEnv("HalfCheetah-v5", seed=0)
    assert (env.obs_size, env.action_size) == (17, 6)
    obs = env.reset()
    assert obs.dtype == np.float32 and obs.shape == (17,)
    step = env.step(np.zeros(6, np.float32))
    assert step.next_obs.dtype == np.float32 and step.next_obs.shape == (17,)


def test_actions_are_rescaled_to_the_bounds_and_clipped():
    env = GymnasiumEnv("Pendulum-v1", seed=0)  # torque in [-2, 2]
    env.reset()
    for action, torque in [(1.0, 2.0), (-0.5, -1.0), (0.0, 0.0), (5.0, 2.0)]:
        env.step(np.array([action], np.float32))
        assert env.unwrapped.last_u == pytest.approx(torque)


def test_time_limit_stores_discount_one_and_the_true_final_observation():
    limit = 5
    rows = stored_transitions(GymnasiumEnv("Hopper-v5", seed=0, max_episode_steps=limit), 20)
    # Replay the same actions on a fresh environment: what each step really returned.
    env = GymnasiumEnv("Hopper-v5", seed=0, max_episode_steps=limit)
    obs = env.reset()
    for t, row in enumerate(rows):
        np.testing.assert_array_equal(row["obs"], obs)
        step = env.step(row["action"])
        np.testing.assert_array_equal(row["next_obs"], step.next_obs)
        assert step.last == ((t + 1) % limit == 0)  # 5 steps: too short for Hopper to fall
        assert row["discount"] == 1.0
        obs = env.reset() if step.last else step.next_obs
        if step.last:
            # The stored next_obs is the final one, not the observation after the reset.
            assert not np.array_equal(row["next_obs"], obs)


def test_a_fall_is_terminal_with_discount_zero():
    rows = stored_transitions(GymnasiumEnv("Hopper-v5", seed=0), 300)
    terminal = [t for t, row in enumerate(rows) if row["discount"] == 0.0]
    assert len(terminal) >= 3  # random actions topple the hopper within tens of steps
    for t, row in enumerate(rows[:-1]):
        # Every terminal is unhealthy (height <= 0.7 or |angle| >= 0.2) and ends its episode.
        z, angle = row["next_obs"][:2]
        fell = z <= 0.7 or abs(angle) >= 0.2 or np.abs(row["next_obs"][1:]).max() >= 100
        assert (t in terminal) == fell
        assert (t in terminal) != np.array_equal(rows[t + 1]["obs"], row["next_obs"])


def test_seed_gives_the_initial_states_seeded_once():
    def first_states(seed, resets=3):
        env = GymnasiumEnv("Hopper-v5", seed=seed)
        return [env.reset() for _ in range(resets)]

    states = first_states(5)
    np.testing.assert_array_equal(np.stack(states), np.stack(first_states(5)))
    assert not np.array_equal(states[0], first_states(6)[0])
    assert not np.array_equal(states[0], states[1])  # seeded by the first reset only


def rollout(env: GymnasiumEnv, actions: np.ndarray) -> list:
    """(obs, reward, discount, last) of each step, resetting at episode ends."""
    out = []
    for action in actions:
        step = env.step(action)
        out.append((step.next_obs, step.reward, step.discount, step.last))
        if step.last:
            out.append((env.reset(), 0.0, 1.0, False))
    return out


def assert_continues_identically(env_id, **kwargs):
    rng = np.random.default_rng(0)
    env = GymnasiumEnv(env_id, seed=1, **kwargs)
    actions = rng.uniform(-1, 1, (80, env.action_size)).astype(np.float32)
    env.reset()
    rollout(env, actions[:30])
    state = json.loads(json.dumps(env.get_state()))  # as a checkpoint stores it
    # Another seed, never reset: everything comes from the state.
    other = GymnasiumEnv(env_id, seed=2, **kwargs)
    other.set_state(state)
    expected, got = rollout(env, actions[30:]), rollout(other, actions[30:])
    assert any(last for *_, last in expected)  # the episodes end and reset after the state
    for (obs, reward, discount, last), (obs2, reward2, discount2, last2) in zip(
        expected, got, strict=True
    ):
        np.testing.assert_array_equal(obs, obs2)
        assert (reward, discount, last) == (reward2, discount2, last2)


@pytest.mark.parametrize("env_id", MUJOCO_V5)
def test_state_round_trip_continues_identically(env_id):
    # Short episodes, so that resets (the random generator) and the time limit count too.
    assert_continues_identically(env_id, max_episode_steps=20)


@pytest.mark.parametrize("env_id", ["Pendulum-v1", "MountainCarContinuous-v0"])
def test_classic_control_state_round_trip_continues_identically(env_id):
    assert_continues_identically(env_id, max_episode_steps=20)


class OpaqueEnv(gymnasium.Env):
    """Dynamics in an attribute the adapter does not know."""

    observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (1,), np.float32)
    action_space = gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x = self.np_random.uniform(-1, 1, 1).astype(np.float32)
        return self.x, {}

    def step(self, action):
        self.x = self.x + action
        return self.x, 0.0, False, False, {}


gymnasium.register("JaxRlTestOpaque-v0", entry_point=OpaqueEnv, max_episode_steps=10)


def test_an_environment_with_unknown_dynamics_restores_what_it_can_and_warns(capsys):
    env = GymnasiumEnv("JaxRlTestOpaque-v0", seed=0)
    env.reset()
    env.step(np.ones(1))
    state = env.get_state()
    assert set(state) == {"seeded", "elapsed_steps", "np_random"}
    other = GymnasiumEnv("JaxRlTestOpaque-v0", seed=1)
    other.set_state(state)
    other.set_state(state)
    assert capsys.readouterr().err.count("simulator state is not restored") == 1
    assert other._time_limit._elapsed_steps == 1
    np.testing.assert_array_equal(env.reset(), other.reset())  # the generator is restored


class ImageEnv(gymnasium.Env):
    observation_space = gymnasium.spaces.Box(0, 255, (8, 8, 3), np.uint8)
    action_space = gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32)


gymnasium.register("JaxRlTestImage-v0", entry_point=ImageEnv)


@pytest.mark.parametrize(
    "env_id, message",
    [
        ("Hoper-v5", "unknown Gymnasium environment 'Hoper-v5'; installed MuJoCo environments: "),
        ("CartPole-v1", "CartPole-v1 has Discrete actions; the learners need continuous"),
        ("JaxRlTestImage-v0", "JaxRlTestImage-v0 observes images; the learners need flat"),
        ("Hopper-v3", "Gymnasium environment 'Hopper-v3' cannot be made: The mujoco v2 and v3"),
    ],
)
def test_environments_the_learners_cannot_drive_are_refused(env_id, message):
    with pytest.raises(UnknownEnvironmentError, match="^" + message.replace("(", r"\(")) as e:
        check_env(env_id)
    assert "\n" not in str(e.value)
    if env_id == "Hoper-v5":
        assert set(MUJOCO_V5) <= set(str(e.value).split(": ")[1].split(" (")[0].split(", "))
        assert "Hopper-v3" not in str(e.value)  # needs mujoco-py


def random_return(env_id: str, episodes: int) -> float:
    env, rng, total = GymnasiumEnv(env_id, seed=3), np.random.default_rng(3), 0.0
    for _ in range(episodes):
        env.reset()
        while not (step := env.step(rng.uniform(-1, 1, env.action_size))).last:
            total += step.reward
        total += step.reward
    return total / episodes


def test_sac_learns_inverted_pendulum(tmp_path: pathlib.Path):
    """A broken adapter (actions, discounts, resets) fails this: random keeps the pole
    up for about 10 steps; SAC with the loop's defaults but smaller, keeps it up for
    several times that within 3,000 steps (about 20 s on 2 cores)."""
    env, eval_env = GymnasiumEnv("InvertedPendulum-v5", 0), GymnasiumEnv("InvertedPendulum-v5", 1)
    config = host.HostLoopConfig(
        max_timesteps=3000, start_timesteps=500, batch_size=64, eval_freq=3000,
        eval_episodes=5, log_freq=1000,
    )  # fmt: skip
    logger = RunLogger(tmp_path, config.max_timesteps, progress=False)
    result = host.train(sac, sac.Config(hidden_sizes=(64, 64)), env, eval_env, config, logger)
    logger.close()
    baseline = random_return("InvertedPendulum-v5", 20)
    first, final = (row["return_mean"] for row in result.evaluations[0])
    assert baseline < 20
    assert final > max(50, 3 * baseline), f"{first:.1f} -> {final:.1f} (random {baseline:.1f})"
