"""The Python door: docs/api.md's examples run as written, and `jax_rl.train` checks its
settings as the command line does (ValueError with the command's line)."""

import re
import sys
from pathlib import Path

import pytest

import jax_rl

DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_train_example_runs_what_the_command_line_runs(capsys):
    namespace: dict = {}
    exec(compile(examples()[0], str(DOC), "exec"), namespace)
    result = namespace["result"]
    assert (result.run_dir / "config.json").is_file()
    assert [row["step"] for row in namespace["rows"]] == [0.0, 200.0, 400.0]
    assert result.final_returns == [namespace["rows"][-1]["return_mean"]]
    assert result.config["policy"] == "SAC" and result.config["flags"]["hidden_sizes"] == [32, 32]
    state = namespace["state"]
    assert (
        int(state.step) == 301
    )  # one update per step from the 100th (100 rows stored) to the 400th
    summary = (result.run_dir / "summary.json").read_text()
    assert '"final_return_mean"' in summary


def test_the_hand_written_loop_learns_the_bandit():
    namespace: dict = {}
    exec(compile(examples()[1], str(DOC), "exec"), namespace)
    before, after = namespace["before"], namespace["after"]
    assert after > before + 0.3 and after > -0.15, (before, after)  # seed 0: -0.58 -> -0.04


@pytest.mark.parametrize(
    "call, message",
    [
        (dict(env="dm_control/walker"), "dm_control tasks are <domain>-<task>"),
        (dict(env="atari/pong"), "give <backend>/<task>"),
        (dict(learning_rate=1e-3), "unknown setting 'learning_rate'"),
        (dict(critic_lr=-1.0), "SAC critic_lr must be > 0, got -1.0"),
        (dict(policy="TD3", alpha_lr=0.1), "--alpha_lr does not apply to --policy TD3"),
        (dict(env="dm_control/walker-fly"), "unknown task 'fly' for domain 'walker'"),
    ],
)
def test_bad_settings_raise_the_command_lines_message(call, message, tmp_path):
    with pytest.raises(ValueError, match=re.escape(message)):
        jax_rl.train(**{"policy": "SAC", "save_dir": str(tmp_path / "never"), **call})
    assert not (tmp_path / "never").exists()


def test_import_jax_rl_loads_no_jax():
    import subprocess

    code = "import sys, jax_rl; print('jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr
