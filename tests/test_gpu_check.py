"""`make gpu-check` end to end on the CPU at tiny sizes: the same programs a GPU runs, so
that a bug cannot eat the GPU's minutes."""

import csv
import json
import os

import pytest

from jax_rl.envs import point_mass
from jax_rl.tools import gpu_check

SESSION_CACHE = os.environ.get("JAX_COMPILATION_CACHE_DIR")


@pytest.fixture(autouse=True)
def session_cache_after():
    """gpu_check points this process's compilation cache at its own folder; the tests
    that run after these in the same worker go back to the session's (conftest.py)."""
    yield
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    jax.config.update("jax_compilation_cache_dir", SESSION_CACHE)
    compilation_cache.reset_cache()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu_check")
    code = gpu_check.main(
        ["--tiny", "--out", str(out), "--results", str(out / "results")]
        + ["--cache_dir", str(out / "cache")]
    )
    return code, out


def test_tiny_run_writes_every_figure(tiny):
    code, out = tiny
    assert code == 0
    report = json.loads((out / "gpu_check.json").read_text())
    labels = [row["label"] for row in report["speed"]]
    assert labels == [
        "TD3 CPU recipe",
        "TD3 fast preset",
        "TD3 fast preset, bf16 matmuls",
        "SAC CPU recipe",
        "SAC fast preset",
    ]
    for row in report["speed"] + report["populations"]:
        assert row["env_steps_per_second"] > 0 and row["updates_per_second"] > 0
    # Timed on the JAX-native point mass; the curve (below) runs Playground's PointMass.
    assert gpu_check.POINT_MASS == point_mass.NAME
    assert {row["task"] for row in report["speed"]} == {point_mass.NAME}
    # Tiny sizes override the preset's 1,024 x 2 x 32,768 but keep its updates per step.
    fast = report["speed"][1]
    assert (fast["num_envs"], fast["updates_per_step"], fast["batch_size"]) == (4, 2, 32)
    assert [row["num_agents"] for row in report["populations"]] == [1, 2]
    markdown = (out / "gpu_check.md").read_text()
    assert "TD3 fast preset, bf16 matmuls" in markdown and "Populations" in markdown


def test_tiny_run_writes_a_learning_curve(tiny):
    _, out = tiny
    with (out / "curves.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert {r["task"] for r in rows} == {"PointMass"}
    steps = [int(r["env_steps"]) for r in rows]
    assert len(rows) >= 3 and steps == sorted(steps) and steps[-1] > steps[0]
    assert (out / "curves.png").stat().st_size > 0
    assert (out / "results" / "PointMass" / "evaluations.csv").exists()


def test_compiled_programs_go_to_the_persistent_cache(tiny):
    _, out = tiny
    cached = [p.name for p in (out / "cache").iterdir()]
    assert any(name.startswith("jit_population_chunk") for name in cached), cached[:20]


def test_a_simba_curve_with_the_evaluations_asked_for(tiny, tmp_path):
    # On the JAX-native point mass (Playground's path is the fixture's curve).
    code = gpu_check.main(
        ["--tiny", "--parts", "curves", "--curve_configs", "simba", "--curve_evals", "2"]
        + ["--curve_tasks", point_mass.NAME, "--curve_seconds", "3", "--out", str(tmp_path)]
        + ["--results", str(tmp_path / "r"), "--cache_dir", str(tmp_path / "cache")]
    )
    assert code == 0
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert list(report["curves"]) == ["point_mass simba"]
    # The untrained agent's evaluation, then 2 more (one more where the last chunk ran over).
    assert len(report["curves"]["point_mass simba"]) in (3, 4)
    assert (tmp_path / "r" / "point_mass-simba" / "evaluations.csv").exists()


def test_parts_runs_only_the_measurements_named(tiny, tmp_path):
    # After the fixture's run the programs are compiled (Run.of keeps them), so this is quick.
    code = gpu_check.main(
        ["--tiny", "--parts", "populations", "--populations", "1"]
        + ["--out", str(tmp_path), "--results", str(tmp_path / "results")]
        + ["--cache_dir", str(tmp_path / "cache")]
    )
    assert code == 0
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["speed"] == [] and report["curves"] == {}
    assert [row["num_agents"] for row in report["populations"]] == [1]
    assert not (tmp_path / "curves.csv").exists() and not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--curve_tasks", "NoSuchTask"], "unknown Playground task(s) NoSuchTask"),
        (["--populations", "1,x"], "--populations takes comma-separated integers"),
        (["--populations", "0"], "--populations must be positive"),
        (["--curve_seconds", "0"], "--curve_seconds must be > 0"),
        (["--parts", "speed,plots"], "--parts takes a comma-separated subset of"),
        (["--curve_configs", "fast,resnet"], "--curve_configs takes a comma-separated subset"),
        (["--curve_evals", "0"], "--curve_evals >= 1"),
        (["--curve_tasks", "Go1JoystickFlatTerrain"], "needs MuJoCo Menagerie"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(argv, message, capsys, tmp_path, monkeypatch):
    from jax_rl.envs import playground

    # No robot models here, whatever this machine's network allows.
    monkeypatch.setattr(playground, "_menagerie_ready", lambda: False)
    assert gpu_check.main(["--tiny", "--out", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
