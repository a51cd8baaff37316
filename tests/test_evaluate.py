"""jax_rl.watch.evaluate's pieces: statistics, fresh seeds, where results go.

Evaluating each backend's trained run end to end is tested beside the run's own tests
(see tests/watching.py); bad inputs with render's, in tests/test_render.py.
"""

import json
from pathlib import Path

import pytest

from jax_rl.run import saved
from jax_rl.run.trainers import EVAL_SEED_OFFSET
from jax_rl.watch import evaluate


def test_statistics_of_the_returns():
    stats = evaluate.statistics([1.0, 2.0, 3.0, 6.0])
    assert stats == {"mean": 3.0, "std": pytest.approx(1.8708, abs=1e-4), "min": 1.0, "max": 6.0}


def test_results_go_beside_the_agent_named_by_what_was_evaluated():
    assert evaluate.result_path(Path("r"), None) == Path("r/evaluation.json")
    assert evaluate.result_path(Path("r"), 5000) == Path("r/evaluation-step5000.json")


def population_run(folder: Path, seeds: list[int]) -> saved.SavedRun:
    """A population of dm_control agents with these seeds (config.json files only)."""
    agents = [{"index": i, "seed": s, "folder": f"SAC-seed{s}"} for i, s in enumerate(seeds)]
    config = {
        "policy": "SAC",
        "env_backend": "dm_control",
        "domain_name": "cartpole",
        "task_name": "swingup",
        "loop": {"seed": seeds[0]},
        "algo": {"hidden_sizes": [8]},
        "agents": agents,
    }
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    for agent in agents:
        (folder / agent["folder"]).mkdir()
        own = {**config, "seed": agent["seed"]}
        (folder / agent["folder"] / "config.json").write_text(json.dumps(own))
    return saved.open_run(folder)


def test_fresh_seeds_are_never_one_the_training_used(tmp_path):
    # Agent 1's seed is exactly where agent 0's fresh seed would start.
    start = saved.FRESH_SEED_OFFSET
    run = population_run(tmp_path / "run", [0, start, start - EVAL_SEED_OFFSET + 1])
    used = {0, 1, EVAL_SEED_OFFSET} | {start, start + 1, start + EVAL_SEED_OFFSET}
    used |= {start - EVAL_SEED_OFFSET + 1, start - EVAL_SEED_OFFSET + 2, start + 1}
    assert run.used_seeds() == used
    for agent in run.agents:
        assert run.fresh_seed(agent) not in used
    assert run.fresh_seed(run.agents[0]) == start + 2


def test_a_population_folder_and_one_agent_folder_open_as_runs(tmp_path):
    run = population_run(tmp_path / "run", [4, 5])
    assert [(a.index, a.seed, a.name) for a in run.agents] == [
        (0, 4, "SAC-seed4"),
        (1, 5, "SAC-seed5"),
    ]
    assert run.kind == "dm_control" and run.task == "cartpole-swingup"
    one = saved.open_run(tmp_path / "run" / "SAC-seed5")
    assert [(a.index, a.seed) for a in one.agents] == [(0, 5)]
    with pytest.raises(saved.RunFolderError, match="--agent 2: .* holds agents 0-1"):
        run.select(2)
