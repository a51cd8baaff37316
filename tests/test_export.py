"""jax_rl.watch.export: exported policies act as their agents, docs/export.md's consumer runs
without jax_rl, and bad input is one line, exit 2, nothing written.

The agents are learner states made by `init`, given statistics a trained agent would hold
(observation means and spreads; CrossQ's BatchRenorm running moments), and saved as a run
saves them: config.json with the learner's settings, agent.msgpack by
`flax.serialization.to_bytes` (`loops.host`). Training them first would cost minutes and
test nothing more of the export.
"""

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import flax.serialization
import jax
import numpy as np
import pytest

from jax_rl import algos
from jax_rl.algos import mpo, sac, td3
from jax_rl.core import normalization
from jax_rl.watch import export

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "export.md"
OBSERVATIONS = 1000
TOLERANCE = 1e-5
# Each learner's case: (algo, its settings, task). Pendulum's actions are in [-2, 2], so
# its export maps [-1, 1] onto the environment's bounds.
WALKER = {"env_backend": "dm_control", "domain_name": "walker", "task_name": "walk"}
PENDULUM = {"env_backend": "gymnasium", "env": "Pendulum-v1"}
CASES = {
    "TD3": (td3, {}, WALKER),
    "SAC": (sac, {}, PENDULUM),
    "CrossQ": (sac, {"critic": "crossq"}, WALKER),
    "SimbaV2": (td3, {"actor_network": "simbav2", "actor_blocks": 2}, WALKER),
    "MPO": (mpo, {}, PENDULUM),
}
SIZES = {"dm_control": (24, 6), "gymnasium": (3, 1)}  # walker-walk's and Pendulum's (O, A)


def trained_looking(algo, settings: dict, obs_size: int, action_size: int, seed: int = 0):
    """A learner state from `init` with the statistics training would have left in it."""
    config = algo.Config(hidden_sizes=(32, 32), normalize_obs=True, **settings)
    # As `saved.load_agent` jits it: the two share one compilation.
    init = jax.jit(
        algo.init, static_argnums=(1, 2, 4), compiler_options=algos.init_compiler_options()
    )
    state = init(jax.random.key(seed), obs_size, action_size, config, 1)
    rng = np.random.default_rng(seed)
    seen = rng.normal(rng.normal(size=obs_size), rng.uniform(0.1, 5.0, obs_size), (500, obs_size))
    state = state.replace(obs_stats=normalization.merge(state.obs_stats, seen.astype(np.float32)))
    if getattr(state, "actor_stats", None) is not None:  # BatchRenorm's running moments

        def moment(path, x):
            name = jax.tree_util.keystr(path[-1:])
            if "mean" in name:
                return rng.normal(0.0, 0.5, x.shape).astype(np.float32)
            if "var" in name:
                return rng.uniform(0.3, 3.0, x.shape).astype(np.float32)
            return x + 10_000  # steps: well past the warm-up

        state = state.replace(
            actor_stats=jax.tree_util.tree_map_with_path(moment, state.actor_stats)
        )
    return config, state


def save_run(folder: Path, policy: str, task: dict, config, state) -> Path:
    """A one-agent run folder as the entry points write it (config.json, agent.msgpack)."""
    folder.mkdir(parents=True)
    record = {"policy": policy, **task, "loop": {"seed": 0}, "algo": dataclasses.asdict(config)}
    (folder / "config.json").write_text(json.dumps(record))
    (folder / "agent.msgpack").write_bytes(flax.serialization.to_bytes(state))
    return folder


def observations(state, count: int, seed: int = 1) -> np.ndarray:
    """[count, O] observations spread like those the agent saw, a few far outside them."""
    stats = state.obs_stats
    rng = np.random.default_rng(seed)
    std = np.sqrt(np.asarray(normalization.variance(stats)))
    draws = rng.standard_normal((count, std.shape[0])) * rng.choice(
        [1.0, 15.0], (count, 1), p=[0.9, 0.1]
    )
    return (np.asarray(stats.mean) + std * draws).astype(np.float32)


def agent_actions(algo, state, obs: np.ndarray, bounds=None) -> np.ndarray:
    """What the agent sends the environment: its deterministic action, clipped to [-1, 1]
    and mapped onto `bounds` as the environment adapters map it."""
    act = jax.jit(lambda s, o: algo.act(s, o, jax.random.key(0), True))
    action = np.clip(np.asarray(act(state, obs)), -1.0, 1.0)
    if bounds is None:
        return action
    low, high = bounds
    return low + (action + 1.0) * 0.5 * (high - low)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Each case's saved run, its state and its observations."""
    made = {}
    for name, (algo, settings, task) in CASES.items():
        obs_size, action_size = SIZES[task["env_backend"]]
        config, state = trained_looking(algo, settings, obs_size, action_size)
        folder = save_run(
            tmp_path_factory.mktemp(name) / "run",
            algo.__name__.split(".")[-1].upper(),
            task,
            config,
            state,
        )
        made[name] = (folder, algo, state, observations(state, OBSERVATIONS))
    return made


@pytest.mark.parametrize("case", list(CASES))
def test_the_exported_files_act_as_the_agent(case, runs, tmp_path):
    """1,000 observations through each format's file and through the agent's `act`."""
    folder, algo, state, obs = runs[case]
    bounds = (np.float32([-2.0]), np.float32([2.0])) if CASES[case][2] is PENDULUM else None
    expected = agent_actions(algo, state, obs, bounds)
    for fmt in export.FORMATS:
        out = tmp_path / f"policy.{fmt}"
        done = export.export(folder, fmt, out)
        assert done.max_difference <= TOLERANCE and done.checked == 256
        data = out.read_bytes()
        actions = export.run_file(data, fmt, obs)
        difference = float(np.abs(actions - expected).max())
        print(f"{case} {fmt}: max |difference| {difference:.3g} over {len(obs)} observations")
        assert actions.shape == expected.shape and difference <= TOLERANCE, (fmt, difference)
        # One observation at a time, as an environment loop feeds it: the batch is free.
        np.testing.assert_allclose(
            export.run_file(data, fmt, obs[:1]), expected[:1], atol=TOLERANCE
        )
    if bounds is not None:
        assert np.abs(expected).max() > 1.0  # the bounds are folded in


def test_the_onnx_file_says_what_it_takes_and_gives(runs, tmp_path):
    import onnxruntime

    folder = runs["SAC"][0]
    out = tmp_path / "pendulum.onnx"
    export.export(folder, "onnx", out)
    session = onnxruntime.InferenceSession(str(out))
    (given,), (taken,) = session.get_inputs(), session.get_outputs()
    assert (given.name, given.shape, taken.name, taken.shape) == (
        "obs", ["batch", 3], "action", ["batch", 1],
    )  # fmt: skip
    meta = session.get_modelmeta().custom_metadata_map
    assert meta["input"] == "obs: float32 [batch, 3], the raw observation"
    assert meta["output"].startswith("action: float32 [batch, 1], within the environment's")
    assert (meta["action_low"], meta["action_high"]) == ("[-2.0]", "[2.0]")
    assert meta["policy"] == "SAC" and meta["task"] == "gymnasium/Pendulum-v1"
    assert meta["checkpoint"] == "final"


def test_a_dict_observation_exports_the_state_the_actor_reads(tmp_path):
    """An asymmetric actor ([state | privileged state], `actor_obs_size`): the file takes
    the `state` part alone, and acts as the agent whatever the privileged part holds."""
    config, state = trained_looking(td3, {"actor_obs_size": 4}, 10, 3)
    policy = export.make_policy(td3, state, obs_size=10, actor_obs_size=4)
    full = observations(state, OBSERVATIONS)
    expected = agent_actions(td3, state, full)
    for fmt in export.FORMATS:
        done = export.write_policy(policy, fmt, tmp_path / f"policy.{fmt}", check=0)
        actions = export.run_file(done.path.read_bytes(), fmt, full[:, :4])
        assert float(np.abs(actions - expected).max()) <= TOLERANCE, fmt


def test_the_bounds_of_the_environment_are_read_from_its_adapter():
    class Host:  # dm_control's and Gymnasium's adapters
        _low, _high = np.float32([-2.0, 0.0]), np.float32([2.0, 5.0])

    class Playground:
        _ctrl_scale = (np.float32([-0.5]), np.float32([0.5]))

    class Device:  # the device loop's BraxEnv around a task
        def __init__(self, task):
            self._env = task

    low, high = export.action_bounds(Host())
    assert low.tolist() == [-2.0, 0.0] and high.tolist() == [2.0, 5.0]
    assert export.action_bounds(Device(Playground()))[1].tolist() == [0.5]
    assert export.action_bounds(Device(object())) is None  # Brax: [-1, 1] as it is

    class Unit:
        _low, _high = np.float32([-1.0]), np.float32([1.0])

    assert export.action_bounds(Unit()) is None


def consumer_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_documented_consumers_run_without_jax_rl(runs, tmp_path, capsys):
    """docs/export.md's two consumers, as written, in a Python where jax_rl cannot be
    imported, on files the command line wrote."""
    folder = runs["SAC"][0]
    for fmt, name in (("onnx", "pendulum.onnx"), ("stablehlo", "pendulum.shlo")):
        assert export.main([str(folder), "--format", fmt, "--out", str(tmp_path / name)]) == 0
        line = capsys.readouterr().out
        assert line.count("\n") == 1 and f"in {tmp_path / name} ({fmt}, " in line, line
        assert "obs: float32 [batch, 3]" in line and "acts as the agent to" in line
    onnx_consumer, stablehlo_consumer = consumer_blocks()
    assert len(onnx_consumer.strip().splitlines()) <= 16
    assert "jax_rl" not in onnx_consumer + stablehlo_consumer
    runner = (
        "import sys\n"
        "sys.modules['jax_rl'] = None  # any import of jax_rl fails\n"
        "for block in sys.argv[1:]:\n"
        "    exec(compile(open(block).read(), block, 'exec'), {'__name__': '__main__'})\n"
    )
    blocks = []
    for i, code in enumerate((onnx_consumer, stablehlo_consumer)):
        blocks.append(tmp_path / f"consumer{i}.py")
        blocks[-1].write_text(code)
    done = subprocess.run(
        [sys.executable, "-c", runner, *map(str, blocks)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    meta, onnx_out, shapes, stablehlo_out = done.stdout.strip().split("\n")
    assert meta.startswith("action: float32 [batch, 1], within the environment's action bounds")
    assert re.fullmatch(r"return -?\d+\.\d over 200 steps", onnx_out), done.stdout
    assert shapes == "(ShapedArray(float32[batch,3]),) -> (ShapedArray(float32[batch,1]),)"
    assert re.fullmatch(r"actions \(4, 1\): \[.+\]", stablehlo_out), done.stdout


def fake_run(folder: Path, agents: int = 1) -> Path:
    """A run folder good for every check before an agent loads (config.json only; a
    population's agent folders)."""
    config = {"policy": "SAC", **WALKER, "loop": {"seed": 3}, "algo": {"hidden_sizes": [8]}}
    folder.mkdir()
    if agents > 1:
        config["agents"] = [
            {"index": i, "seed": i, "folder": f"SAC-seed{i}"} for i in range(agents)
        ]
        for entry in config["agents"]:
            (folder / entry["folder"]).mkdir()
            own = {**config, "seed": entry["seed"]}
            (folder / entry["folder"] / "config.json").write_text(json.dumps(own))
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize(
    "args, message",
    [
        ([], "has no agent.msgpack (written when training ends)"),
        (["--checkpoint", "7"], "--checkpoint 7: no such checkpoint"),
        (["--agent", "1"], "--agent 1: "),
        (["population"], "holds 2 agents; pass --agent K (0-1) to export one"),
        (["not a run"], "is not a run folder (no config.json"),
        (["--out", "missing/policy.onnx"], "no such folder"),
        (["--out", "."], "is a folder; give the file to write"),
        (["--format", "tflite"], "argument --format: invalid choice: 'tflite'"),
        (["--check", "-1"], "--check must be >= 0, got -1"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(
    args, message, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    if args == ["population"]:
        fake_run(run, agents=2)
        args = []
    elif args == ["not a run"]:
        run.mkdir()
        args = []
    else:
        fake_run(run)
    flags = {"--format": "onnx", "--out": "policy.onnx"}
    for flag, value in zip(args[::2], args[1::2], strict=True):
        flags[flag] = value
    with pytest.raises(SystemExit) as e:
        export.main([str(run), *(x for item in flags.items() for x in item)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    written = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    assert all(name == "config.json" for name in written), written


@pytest.mark.parametrize("fault", ["the converter fails", "the file acts otherwise"])
def test_a_policy_that_does_not_export_writes_nothing(fault, runs, tmp_path, capsys, monkeypatch):
    folder = runs["MPO"][0]
    if fault == "the converter fails":
        import jax2onnx

        def refuse(*args, **kwargs):
            raise NotImplementedError("no ONNX lowering for primitive 'frobnicate'")

        monkeypatch.setattr(jax2onnx, "to_onnx", refuse)
        message = (
            "jax2onnx cannot convert this policy (no ONNX lowering for primitive 'frobnicate')"
        )
    else:
        run_file = export.run_file
        monkeypatch.setattr(export, "run_file", lambda *a: run_file(*a) + 1e-3)
        message = "the onnx file's actions differ from the agent's by up to 0.001 on 256"
    with pytest.raises(SystemExit) as e:
        export.main([str(folder), "--format", "onnx", "--out", str(tmp_path / "policy.onnx")])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert list(tmp_path.iterdir()) == []
