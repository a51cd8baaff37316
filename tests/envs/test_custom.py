"""A user's own environments (docs/custom_envs.md): each way of handing one over trains a
short run as the page shows it, the run opens again as the page says, and what the
learners cannot drive is refused with one line before anything compiles."""

import csv
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import gymnasium
import numpy as np
import pytest

import jax_rl
import jax_rl.envs.dm_control  # noqa: F401 - MUJOCO_GL set before dm_control is imported
from jax_rl.envs import UnknownEnvironmentError
from jax_rl.envs.custom import identify
from jax_rl.envs.gymnasium import check_env
from jax_rl.run.saved import RunFolderError, open_run
from jax_rl.watch import evaluate

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "custom_envs.md"
SCRIPT = ROOT / "jax_rl" / "main_gym.py"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), re.S)


def block(marker: str) -> str:
    """The page's Python block that holds `marker`."""
    (found,) = [b for b in blocks("python") if marker in b]
    return found


@pytest.fixture(scope="module")
def my_envs(tmp_path_factory):
    """The page's my_envs.py in a folder of its own, importable here (and, on PYTHONPATH,
    in the commands the tests run)."""
    folder = tmp_path_factory.mktemp("my_envs")
    (folder / "my_envs.py").write_text(block('"""my_envs.py'))
    sys.path.insert(0, str(folder))
    yield folder
    sys.path.remove(str(folder))
    sys.modules.pop("my_envs", None)


@pytest.fixture
def page(my_envs, tmp_path, monkeypatch):
    """Runs one of the page's Python blocks as a script of its own would (its `__main__`,
    after the block of shared sizes), its temporary folders in `tmp_path`; the names it
    defined."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def run(marker: str) -> dict:
        namespace: dict = {"__name__": "__main__"}
        for code in (block("SMOKE = dict("), block(marker)):
            exec(compile(code, str(DOC), "exec"), namespace)
        return namespace

    return run


def one_line_exit_2(capsys, call) -> str:
    with pytest.raises(SystemExit) as e:
        call()
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


def returns(run_dir: Path) -> list[tuple[str, str, str]]:
    """Each evaluation's step and returns (not its wall time)."""
    rows = (run_dir / "evaluations.csv").read_text().splitlines()
    return [(row["step"], row["return_mean"], row["return_std"]) for row in csv.DictReader(rows)]


def flags_of(smoke: dict) -> list[str]:
    """The page's SMOKE sizes as command-line flags."""
    argv = []
    for key, value in smoke.items():
        if key == "progress":
            argv.append("--no_progress")
        else:
            argv += [
                f"--{key}",
                ",".join(map(str, value)) if isinstance(value, tuple) else str(value),
            ]
    return argv


@pytest.fixture(scope="module")
def command_line_run(my_envs, tmp_path_factory):
    """The page's command, at the SMOKE sizes, in a folder of its own (the run's default
    folder under it): (completed process, run folder)."""
    (command,) = [line for b in blocks("bash") for line in b.splitlines() if "my_envs:" in line]
    argv = command.split()
    assert argv[:3] == ["PYTHONPATH=.", ".venv/bin/python", "jax_rl/main_gym.py"], argv
    namespace: dict = {}
    exec(block("SMOKE = dict("), namespace)
    cwd = tmp_path_factory.mktemp("command")
    result = subprocess.run(
        [sys.executable, str(SCRIPT), *argv[3:], *flags_of(namespace["SMOKE"])],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(my_envs)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    return result, cwd / "runs" / "SAC-my_envs-PointLine-v0-seed0"


def test_a_module_id_on_the_command_line_imports_the_module_and_trains(command_line_run):
    result, run_dir = command_line_run
    assert result.returncode == 0, result.stderr
    assert "on gymnasium my_envs:PointLine-v0" in result.stderr.splitlines()[0]
    config = json.loads((run_dir / "config.json").read_text())
    assert (config["env_backend"], config["env"]) == ("gymnasium", "my_envs:PointLine-v0")
    assert "custom_env" not in config  # a name: reopened as any named task is
    assert config["preset"]["name"] == "gymnasium/*"
    assert evaluate.main([str(run_dir), "--episodes", "1"]) == 0  # the module imported again


def test_a_module_that_does_not_import_exits_2_with_one_line_and_writes_nothing(
    tmp_path, monkeypatch, capsys
):
    from jax_rl import main_gym

    monkeypatch.chdir(tmp_path)  # where its default run folder would go
    err = one_line_exit_2(capsys, lambda: main_gym.main(["--env", "my_envz:PointLine-v0"]))
    assert err == (
        "error: Gymnasium id 'my_envz:PointLine-v0': module 'my_envz' does not import "
        "(ModuleNotFoundError: No module named 'my_envz'); it must be importable (installed, "
        "or on PYTHONPATH)\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_module_id_whose_spaces_the_learners_cannot_take_exits_2_with_one_line(
    tmp_path, monkeypatch, capsys
):
    from jax_rl import main_gym

    (tmp_path / "choices.py").write_text(
        "import gymnasium\n"
        "gymnasium.register('Choice-v0', "
        "entry_point='gymnasium.envs.classic_control:CartPoleEnv')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    err = one_line_exit_2(capsys, lambda: main_gym.main(["--env", "choices:Choice-v0"]))
    assert "Choice-v0 has Discrete actions; the learners need continuous (Box) actions" in err
    assert not (tmp_path / "runs").exists()


def test_a_module_id_whose_module_registers_no_such_id_is_refused(my_envs):
    with pytest.raises(UnknownEnvironmentError, match="imports but registers no 'Point-v0'"):
        check_env("my_envs:Point-v0")


def test_a_gymnasium_factory_trains_what_its_id_trains_and_reopens_by_its_path(
    page, command_line_run
):
    result = page("env=my_envs.make_point_line")["result"]
    assert result.config["env"] == "PointLine-v0"
    assert result.config["custom_env"] == {
        "factory": "my_envs:make_point_line",
        "type": "my_envs:PointLine",
    }
    # The same seeds draw the same episodes: the command line's run, exactly.
    assert returns(result.run_dir) == returns(command_line_run[1])
    # Reopened by its import path: from the command line as from Python.
    assert evaluate.main([str(result.run_dir), "--episodes", "1"]) == 0
    assert (result.run_dir / "evaluation.json").is_file()
    assert int(jax_rl.read_result(result.run_dir).agent(0).step) == 301
    with pytest.raises(RunFolderError, match="its factory must make it with render_mode="):
        open_run(result.run_dir).open_env(0, (64, 64))  # what render and --video_every need
    # Resumed with the same factory (its last checkpoint is the end), not with another.
    smoke = page("SMOKE = dict(")["SMOKE"]
    again = jax_rl.train("SAC", env=result.env, resume=str(result.run_dir), **smoke)
    assert again.final_returns == result.final_returns
    with pytest.raises(ValueError, match="cannot resume: the run was started with other"):
        jax_rl.train("SAC", env=Line, resume=str(result.run_dir), **smoke)


def test_a_dm_control_factory_trains_and_without_a_path_is_handed_over_again(page, capsys):
    names = page("def upright():")
    result, upright = names["result"], names["upright"]
    assert (result.config["env_backend"], result.config["env"]) == ("dm_control", "Upright")
    assert result.config["custom_env"] == {"factory": None, "type": "__main__:Upright"}
    capsys.readouterr()
    err = one_line_exit_2(capsys, lambda: evaluate.main([str(result.run_dir)]))
    assert "cannot be reopened by name: from Python hand it over again" in err
    again = jax_rl.read_result(result.run_dir)  # its results need no environment
    assert again.final_returns == result.final_returns
    with pytest.raises(ValueError, match="hand it over again"):
        again.agent(0)
    assert int(jax_rl.read_result(result.run_dir, env=upright).agent(0).step) == 301


def test_a_dm_control_factory_of_a_suite_task_draws_what_the_named_task_draws():
    """Its task reseeded with the agent's seed: the same initial states, episode after
    episode, as the suite's own task_kwargs={"random": seed} (the rest is the same code)."""
    from dm_control import suite

    from jax_rl.envs.dm_control import DMControlEnv

    for seed in (0, 10_000):
        named = DMControlEnv("cartpole", "balance", seed)
        made = DMControlEnv.of(suite.load("cartpole", "balance"), "Balance", seed)
        for _ in range(3):
            np.testing.assert_array_equal(made.reset(), named.reset())
            action = np.full(1, 0.5, np.float32)
            step, expected = made.step(action), named.step(action)
            np.testing.assert_array_equal(step.next_obs, expected.next_obs)
            assert (step.reward, step.discount) == (expected.reward, expected.discount)


def test_a_brax_environment_object_trains_on_the_device(page):
    result = page("class Drift(Env):")["result"]
    config = result.config
    assert (config["env_backend"], config["env"], config["backend"]) == ("brax", "Drift", "custom")
    assert config["custom_env"] == {"factory": None, "type": "__main__:Drift"}
    assert config["loop"]["episode_length"] == 20
    assert int(result.agent(0).step) > 0  # the object it trained on, still held


def test_a_playground_environment_object_is_wrapped_as_its_named_task_is():
    from mujoco_playground import registry

    from jax_rl.envs import playground

    custom = identify(registry.load("CartpoleBalance", config_overrides={"impl": "jax"}))
    assert (custom.kind, custom.name) == ("playground", "Balance")  # its class
    wrapped = playground.wrap_env(custom.make(), custom.name)
    named = playground.make_env("CartpoleBalance")
    assert (wrapped.obs_size, wrapped.action_size) == (named.obs_size, named.action_size)
    assert wrapped.episode_length == named.episode_length
    assert wrapped._custom.action_repeat == named._custom.action_repeat
    assert wrapped != named  # another object: its compiled programs are its own


# --- What the learners cannot drive ------------------------------------------------------------


class Line(gymnasium.Env):
    """PointLine's spaces, or the ones a test gives it."""

    def __init__(self, observation_space=None, action_space=None) -> None:
        box = gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.observation_space = observation_space or gymnasium.spaces.Box(-1.0, 1.0, (2,))
        self.action_space = action_space or box


def gym_factory(**spaces):
    return lambda: Line(**spaces)


def coin():
    """cartpole-balance taking a discrete action."""
    import dm_env
    from dm_control.rl import control
    from dm_control.suite import cartpole

    class Coin(control.Environment):
        def action_spec(self):
            return dm_env.specs.DiscreteArray(2)

    physics = cartpole.Physics.from_xml_string(*cartpole.get_model_and_assets())
    return Coin(physics, cartpole.Balance(swing_up=False, sparse=False))


def brax_fast(mode: str):
    from brax.envs.fast import Fast

    return Fast(obs_mode=mode)


Box, Dict, Discrete = gymnasium.spaces.Box, gymnasium.spaces.Dict, gymnasium.spaces.Discrete
REFUSED = [
    (gym_factory(action_space=Discrete(3)), "Line has Discrete actions; the learners need"),
    (gym_factory(action_space=Box(-np.inf, np.inf, (1,))), "is not a 1-D Box with finite bounds"),
    (
        gym_factory(observation_space=Dict({"x": Box(-1, 1)})),
        "Line observes a Dict (x); the learners need flat (1-D Box) observations "
        "(gymnasium.wrappers.FlattenObservation",
    ),
    (gym_factory(observation_space=Box(0, 255, (8, 8, 3), np.uint8)), "Line observes images"),
    (Line(), "environment; pass a factory that makes one (its class, or a function)"),
    (coin, "Balance takes DiscreteArray"),
    (lambda: brax_fast("dict_state"), "Fast observes a dict (state); the learners need one flat"),
    (lambda: brax_fast("dict_pixels"), "Fast observes a dict"),
    (42, "env= is a builtins:int: give a task name, a factory"),
    (lambda: "CartPole-v1", "env= made a builtins:str, which is none of"),
]


@pytest.mark.parametrize("env, message", REFUSED)
def test_environments_the_learners_cannot_drive_are_refused_with_one_line(env, message, tmp_path):
    with pytest.raises(ValueError) as e:
        jax_rl.train("SAC", env=env, save_dir=str(tmp_path / "never"))
    assert message in str(e.value) and "\n" not in str(e.value), str(e.value)
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"domain_name": "cartpole"}, "domain_name= names a task; env= is the environment"),
        ({"engine": "ray"}, "an environment handed over as an object trains with the local"),
        ({"learning_rate": 1.0}, "unknown setting 'learning_rate' for gymnasium Line"),
    ],
)
def test_settings_that_name_another_task_are_refused(settings, message, tmp_path):
    with pytest.raises(ValueError, match=re.escape(message)):
        jax_rl.train("SAC", env=Line, save_dir=str(tmp_path / "never"), **settings)
    assert not (tmp_path / "never").exists()


def test_a_factory_is_called_once_to_identify_it():
    calls = []

    def factory():
        calls.append(1)
        return Line()

    custom = identify(factory)
    assert (custom.factory, custom.made.endswith(":Line"), len(calls)) == (None, True, 1)
