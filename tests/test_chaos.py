"""`make chaos` in short: a host-loop run SIGKILLed at a random moment (the full version:
20 kills on the host loop, 10 on the device loop) ends bitwise equal to the run left
alone, with no temporary folder left and every kept checkpoint loading."""

import os

from jax_rl.tools import chaos


def test_a_run_killed_at_random_moments_ends_as_the_uninterrupted_one(tmp_path, monkeypatch):
    script, flags = chaos.RUNS["host"]
    shorter = [*flags]
    shorter[shorter.index("--max_timesteps") + 1] = "1200"
    shorter[shorter.index("--eval_freq") + 1] = "400"
    monkeypatch.setitem(chaos.RUNS, "host", (script, shorter))
    # The processes load their programs from the session's compilation cache (conftest.py).
    row = chaos.chaos("host", 2, tmp_path, seed=1, env=dict(os.environ))
    assert row["kills"] == 2 and row["processes_started"] >= 3
    assert row["final_agent_bitwise_equal"] and row["evaluations_equal"], row
    assert row["temporary_folders_left"] == [] and row["checkpoints_failing_to_load"] == []
    assert row["kept_checkpoints"] == [1100, 1200]
    assert chaos.passed(row)
    table = chaos.markdown([row], {"cpu": "test", "cores": 2})
    assert "| host | 2 |" in table and "| yes | yes | 0 | 0 |" in table
