"""Checkpoints: the orbax store itself, resuming without the buffer, determinism, the NaN guard.

Exact resumption after SIGKILL, through the entry points, is in test_cli.py.
"""

import dataclasses

import flax.serialization
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_rl.algos import sac, td3
from jax_rl.envs.dm_control import DMControlEnv
from jax_rl.envs.point_mass import point_mass_env
from jax_rl.io.checkpoint import Checkpointer, CheckpointError, all_finite, check_same_run
from jax_rl.io.logger import PopulationLogger, RunLogger
from jax_rl.loops import device, host
from jax_rl.loops.common import NonFiniteError, RunControl

# --- the store -------------------------------------------------------------------------------


def _tree():
    return {
        "w": jnp.arange(6, dtype=jnp.float32).reshape(2, 3),
        "n": jnp.int32(7),
        "key": jax.random.key(3),
        "nothing": None,
    }


def test_round_trip_keeps_values_dtypes_and_prng_keys(tmp_path):
    ckpt = Checkpointer(tmp_path / "c")
    assert ckpt.latest_step() is None
    ckpt.save(5, _tree(), {"note": "x", "big": 2**80})
    like = jax.tree_util.tree_map(jnp.zeros_like, _tree())
    like["key"] = jax.random.key(0)
    restored, meta = ckpt.restore(like)
    assert meta["step"] == 5 and meta["note"] == "x" and meta["big"] == 2**80
    np.testing.assert_array_equal(restored["w"], _tree()["w"])
    assert restored["n"].dtype == jnp.int32 and int(restored["n"]) == 7
    # The key continues the same stream.
    np.testing.assert_array_equal(
        jax.random.uniform(restored["key"], (4,)), jax.random.uniform(jax.random.key(3), (4,))
    )


def test_only_the_newest_two_are_kept_and_the_newest_is_restored(tmp_path):
    ckpt = Checkpointer(tmp_path / "c")
    for step in (10, 20, 30):
        ckpt.save(step, {"x": jnp.float32(step)}, {})
    assert sorted(int(p.name) for p in (tmp_path / "c").iterdir() if p.name.isdigit()) == [20, 30]
    restored, _ = ckpt.restore({"x": jnp.float32(0)})
    assert float(restored["x"]) == 30.0


def test_a_restored_state_runs_the_programs_a_fresh_one_compiled(tmp_path):
    """Restored arrays are uncommitted, as a fresh run's are: a jitted program compiled for
    the fresh state serves the restored one (committed arrays are lowered with their
    placement in the program, so a resumed run compiled everything again)."""
    tree = {"w": jnp.arange(6, dtype=jnp.float32).reshape(2, 3), "key": jax.random.key(3)}
    step = jax.jit(lambda t: {"w": t["w"] * 2, "key": jax.random.split(t["key"])[0]})
    step(tree)
    ckpt = Checkpointer(tmp_path / "c")
    ckpt.save(1, tree, {})
    restored, _ = ckpt.restore(tree)
    part = Checkpointer(tmp_path / "c").restore_part({"w": tree["w"]}, "")  # as `evaluate` reads
    for leaf in (*jax.tree_util.tree_leaves(restored), part["w"]):
        assert not leaf.committed
    step(restored)
    step({**tree, "w": part["w"]})
    assert step._cache_size() == 1


def test_other_shapes_are_refused_with_the_leaf_named(tmp_path):
    ckpt = Checkpointer(tmp_path / "c")
    ckpt.save(1, {"critic": jnp.zeros((4, 3))}, {})
    with pytest.raises(CheckpointError, match=r"\['critic'\] is float32\[4, 3\].*incompatible"):
        ckpt.restore({"critic": jnp.zeros((4, 5))})
    with pytest.raises(CheckpointError, match="holds 1 arrays, this run has 2"):
        ckpt.restore({"critic": jnp.zeros((4, 3)), "extra": jnp.zeros(2)})


def traced(config) -> dict:
    """A Config's traced settings, the leaves a learner's state holds, by name."""
    fields = dataclasses.fields(config)
    return {f.name: getattr(config, f.name) for f in fields if f.metadata.get("pytree_node", True)}


def test_a_setting_newer_than_the_checkpoint_takes_the_runs_value(tmp_path):
    """A checkpoint of a learner written before its Config gained two traced settings (as
    TD3 gained encoder_lr and lap_alpha) restores into today's state: every stored leaf
    from the checkpoint, the two settings from the template (the run's defaults)."""
    old = td3.init(jax.random.key(0), 3, 2, td3.Config(hidden_sizes=(8,)))
    config = {k: v for k, v in traced(old.config).items() if k not in ("encoder_lr", "lap_alpha")}
    saved = {"agent": {"params": old.actor_params, "config": config}}
    ckpt = Checkpointer(tmp_path / "c")
    ckpt.save(1, saved, {})
    fresh = td3.init(jax.random.key(1), 3, 2, td3.Config(hidden_sizes=(8,)))
    template = {"agent": {"params": fresh.actor_params, "config": traced(fresh.config)}}
    restored, _ = ckpt.restore(template)
    for x, y in zip(jax.tree_util.tree_leaves(restored["agent"]["params"]),
                    jax.tree_util.tree_leaves(old.actor_params), strict=True):  # fmt: skip
        np.testing.assert_array_equal(x, y)
    assert float(restored["agent"]["config"]["lap_alpha"]) == pytest.approx(0.4)
    assert float(restored["agent"]["config"]["encoder_lr"]) == pytest.approx(3e-4)
    part = Checkpointer(tmp_path / "c").restore_part(template["agent"], "['agent']")
    assert float(part["config"]["lap_alpha"]) == pytest.approx(0.4)
    # Any other leaf the checkpoint lacks is still refused.
    with pytest.raises(CheckpointError, match="this run has"):
        ckpt.restore({"agent": {**template["agent"], "more": jnp.zeros(2)}})


def test_a_corrupt_checkpoint_is_an_error_not_a_traceback(tmp_path):
    ckpt = Checkpointer(tmp_path / "c")
    ckpt.save(1, {"x": jnp.ones(3)}, {})
    for path in (tmp_path / "c" / "1" / "meta").rglob("*"):
        if path.is_file():
            path.write_text("{not json")
    with pytest.raises(CheckpointError, match="cannot be read"):
        Checkpointer(tmp_path / "c").read_meta()
    with pytest.raises(CheckpointError, match="no complete checkpoint"):
        Checkpointer(tmp_path / "empty").read_meta()


def test_only_the_owner_clears_a_killed_saves_leftovers_and_close_reopens(tmp_path):
    from jax_rl.tools.chaos import leftovers

    Checkpointer(tmp_path / "c").save(10, {"x": jnp.ones(2)}, {})
    killed = tmp_path / "c" / "20.orbax-checkpoint-tmp-1234567"  # a save killed midway
    (killed / "arrays").mkdir(parents=True)
    reader = Checkpointer(tmp_path / "c")  # a reader must leave it: it may be a live save
    assert reader.latest_step() == 10
    reader.close()
    assert leftovers(tmp_path / "c") == [killed]
    owner = Checkpointer(tmp_path / "c", owner=True)
    assert owner.latest_step() == 10
    # Done once opened (Orbax's own clean-up thread would be waited for only by a save).
    assert leftovers(tmp_path / "c") == []
    owner.close()  # what a refusing process calls before it exits
    owner.close()  # twice is harmless, and the checkpointer opens again when used
    assert owner.latest_step() == 10


def test_settings_that_changed_are_listed():
    stored = {"policy": "SAC", "actor_lr": 3e-4, "hidden_sizes": [256, 256], "max_timesteps": 10}
    check_same_run(
        stored, {**stored, "hidden_sizes": (256, 256), "max_timesteps": 20}, {"max_timesteps"}
    )
    with pytest.raises(CheckpointError, match="policy: checkpoint has 'SAC', this run 'TD3'"):
        check_same_run(stored, {**stored, "policy": "TD3"}, set())
    # A setting newer than the checkpoint: the run had its default then; only another
    # value is a change.
    newer = {**stored, "scale_rewards": False}
    check_same_run(stored, newer, set(), defaults={"scale_rewards": False})
    with pytest.raises(CheckpointError, match="scale_rewards: checkpoint has False, this run True"):
        check_same_run(stored, {**newer, "scale_rewards": True}, set(), {"scale_rewards": False})
    with pytest.raises(CheckpointError, match="scale_rewards: checkpoint has None"):
        check_same_run(stored, newer, set())  # no default known: a change


def test_all_finite():
    assert bool(all_finite({"a": jnp.ones(3), "k": jax.random.key(0), "i": jnp.int32(1)}))
    assert not bool(all_finite({"a": jnp.array([1.0, jnp.nan])}))
    assert not bool(all_finite([jnp.ones(2), jnp.array(jnp.inf)]))


# --- exact resumption, in process (a crash simulated by an exception) -------------------------


class Crash(Exception):
    pass


class CrashingLogger(RunLogger):
    """A logger that raises after writing the train row of step `crash_at`."""

    def __init__(self, *args, crash_at=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.crash_at = crash_at

    def log_train(self, step, metrics):
        super().log_train(step, metrics)
        if step == self.crash_at:
            raise Crash


def _evaluations(path):
    """Evaluation rows without the wall time (which a resumed run cannot reproduce)."""
    lines = (path / "evaluations.csv").read_text().splitlines()
    return [",".join(v for i, v in enumerate(line.split(",")) if i != 1) for line in lines]


HOST = dict(
    max_timesteps=400,
    start_timesteps=100,
    batch_size=32,
    eval_freq=200,
    eval_episodes=1,
    log_freq=50,
)


def _host_run(
    algo,
    out,
    crash_at=None,
    resume=False,
    keep_replay=True,
    every=150,
    n_step=1,
    noise_color=0.0,
    **algo_kw,
):
    config = host.HostLoopConfig(**HOST, n_step=n_step, noise_color=noise_color)
    logger = CrashingLogger(out, config.max_timesteps, progress=False, crash_at=crash_at)
    control = RunControl(
        Checkpointer(out / "checkpoints"),
        every=every,
        resume=resume,
        keep_replay=keep_replay,
        identity={"policy": algo.__name__},
    )
    env = DMControlEnv("cartpole", "swingup", seed=0)
    eval_env = DMControlEnv("cartpole", "swingup", seed=1)
    algo_config = algo.Config(hidden_sizes=(32, 32), **algo_kw)
    try:
        return host.train(algo, algo_config, env, eval_env, config, logger, control)
    finally:
        logger.close()


def test_host_loop_without_the_replay_in_checkpoints_refills_before_learning(tmp_path):
    with pytest.raises(Crash):
        _host_run(td3, tmp_path, crash_at=350, keep_replay=False)
    resumed = _host_run(td3, tmp_path, resume=True, keep_replay=False)
    # The 100 steps after the checkpoint at 300 refill the empty buffer; learning
    # resumes when it holds start_timesteps rows, at step 400: the 201 updates of
    # steps 100..300 plus one.
    assert int(resumed.learner.replay.size) == 100
    assert int(resumed.learner.agent.step) == 201 + 1


@pytest.mark.parametrize(
    "loop",
    [
        dict(n_step=4),
        dict(noise_color=1.0),
        dict(normalize_obs=True, critic="categorical"),
        dict(hold_exploration=True, exploration_share=0.1, share_horizon=3),
    ],
    ids=["n_step", "pink_noise", "normalized_categorical", "share_horizon"],
)
def test_run_killed_and_resumed_ends_as_the_uninterrupted_one(loop, tmp_path):
    # n_step: the checkpoint at step 300 holds the n - 1 = 3 steps not yet stored.
    # pink_noise: it holds the episode's noise sequence, 201 of its rows used.
    # normalized_categorical: it holds the observation statistics of 300 steps.
    # share_horizon: its windows' reward share, and so the horizon each row takes.
    whole = _host_run(td3, tmp_path / "whole", **loop)
    with pytest.raises(Crash):
        _host_run(td3, tmp_path / "cut", crash_at=350, **loop)
    resumed = _host_run(td3, tmp_path / "cut", resume=True, **loop)
    assert _evaluations(tmp_path / "cut") == _evaluations(tmp_path / "whole")
    assert int(resumed.learner.replay.size) == 400 - (loop.get("n_step", 1) - 1)
    for a, b in zip(
        jax.tree_util.tree_leaves(jax.device_get(resumed.learner)),
        jax.tree_util.tree_leaves(jax.device_get(whole.learner)),
        strict=True,
    ):
        if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        np.testing.assert_array_equal(a, b)


def test_same_seed_gives_identical_runs(tmp_path):
    a = _host_run(sac, tmp_path / "a")
    b = _host_run(sac, tmp_path / "b")
    assert flax.serialization.to_bytes(a.learner.agent) == flax.serialization.to_bytes(
        b.learner.agent
    )
    assert _evaluations(tmp_path / "a") == _evaluations(tmp_path / "b")


def test_non_finite_loss_stops_the_run_and_keeps_the_last_good_checkpoint(tmp_path):
    with pytest.raises(NonFiniteError, match=r"non-finite .* at step \d+") as stop:
        _host_run(td3, tmp_path, actor_lr=1e30, critic_lr=1e30, every=50)
    last = stop.value.last_checkpoint
    assert last is not None and last < stop.value.step
    ckpt = Checkpointer(tmp_path / "checkpoints")
    assert ckpt.latest_step() == last
    config = td3.Config(hidden_sizes=(32, 32))
    learner = host.init_population(td3, [config], [0], 5, 1, 400, 32)
    like = {
        "learner": learner,
        "obs": np.zeros((1, 5), np.float32),
        "action": np.zeros((1, 1), np.float32),
    }
    restored, meta = ckpt.restore(like)
    assert meta["step"] == last and bool(all_finite(restored["learner"].agent))


DEVICE = dict(
    max_timesteps=512,
    num_envs=8,
    updates_per_step=2,
    start_timesteps=128,
    batch_size=32,
    eval_freq=256,
    eval_episodes=2,
    log_freq=64,
    episode_length=20,
)


@pytest.fixture(scope="module")
def point_mass():
    # One environment object for the module: the compiled pipelines are cached per object.
    # The checkpoint is the learner-independent carry; a JAX-native probe compiles fast.
    return point_mass_env(episode_length=DEVICE["episode_length"])


def _device_run(algo, env, out, crash_at=None, resume=False, **algo_kw):
    config = device.DeviceLoopConfig(**DEVICE)
    logger = CrashingLogger(out, config.total_steps, progress=False, crash_at=crash_at)
    control = RunControl(
        Checkpointer(out / "checkpoints"), every=128, resume=resume, identity={"policy": "x"}
    )
    algo_config = algo.Config(hidden_sizes=(16,), **algo_kw)
    try:
        return device.train(algo, algo_config, env, config, logger, control)
    finally:
        logger.close()


def test_device_loop_stops_on_a_non_finite_loss(point_mass, tmp_path):
    with pytest.raises(NonFiniteError, match=r"non-finite (loss/\w+|parameter) at step \d+"):
        _device_run(td3, point_mass, tmp_path, actor_lr=1e30, critic_lr=1e30)
    latest = Checkpointer(tmp_path / "checkpoints").latest_step()
    assert latest is None or latest >= 128


def _population_run(env, out, crash_at=None, resume=False):
    config = device.DeviceLoopConfig(**DEVICE)
    dirs = [out / "a", out / "b"]
    agents = [
        CrashingLogger(d, config.total_steps, progress=False, crash_at=crash_at) for d in dirs
    ]
    logger = PopulationLogger(agents, RunLogger(out, config.total_steps, progress=False))
    control = RunControl(
        Checkpointer(out / "checkpoints"), every=128, resume=resume, identity={"policy": "x"}
    )
    configs = [td3.Config(hidden_sizes=(16,), tau=tau) for tau in (0.005, 0.05)]
    try:
        return device.train_population(td3, configs, [3, 4], env, config, logger, control)
    finally:
        logger.close()


def test_population_killed_and_resumed_ends_as_the_uninterrupted_one(point_mass, tmp_path):
    whole = _population_run(point_mass, tmp_path / "whole")
    with pytest.raises(Crash):
        _population_run(point_mass, tmp_path / "cut", crash_at=320)
    assert Checkpointer(tmp_path / "cut" / "checkpoints").latest_step() == 256
    resumed = _population_run(point_mass, tmp_path / "cut", resume=True)
    for name in ("a", "b"):
        assert _evaluations(tmp_path / "cut" / name) == _evaluations(tmp_path / "whole" / name)
    for i in range(2):
        assert flax.serialization.to_bytes(resumed.agent(i).agent) == flax.serialization.to_bytes(
            whole.agent(i).agent
        )
