"""`make soak` in short: a 3,000-step SAC run sampled every 1,000 steps (the full version:
1M steps, a sample every 50k), written to a scratch folder, never to docs/."""

import json
import re
from pathlib import Path

from jax_rl.tools import soak

ROOT = Path(__file__).resolve().parents[1]


def test_a_short_soak_samples_memory_and_speed_into_a_scratch_folder(capsys):
    committed = ROOT / "docs" / "benchmarks" / "soak.md"
    before = committed.read_text() if committed.exists() else None
    flags = "--hidden_sizes 16 --batch_size 32 --start_timesteps 500"
    code = soak.main(["--steps", "3000", "--every", "1000", "--flags", flags])
    err = capsys.readouterr().err
    folder = Path(re.search(r"writing to (\S+)", err).group(1))
    row = json.loads((folder / "soak.json").read_text())
    assert row["returncode"] == 0 and row["replay_full_at"] == 1000
    assert [s["step"] for s in row["samples"]] == [1000, 2000, 3000]
    # The child was alive at the first two marks: its memory was read, and it is a
    # process's (over 100 MiB with JAX loaded).
    assert all(s["resident_bytes"] > 100 * 2**20 for s in row["samples"][:2])
    # Seconds per 1000 steps of the intervals with a row of train.csv before them (the
    # first has none: the first row is written at the first mark).
    assert row["samples"][0]["seconds_per_1000"] is None
    assert all(s["seconds_per_1000"] > 0 for s in row["samples"][1:])
    assert code == (0 if soak.passed(row) else 1)
    assert "| 2,000 |" in (folder / "soak.md").read_text()
    after = committed.read_text() if committed.exists() else None
    assert before == after  # a shorter soak never writes the committed table


def test_bad_sizes_exit_2(capsys):
    assert soak.main(["--steps", "100", "--every", "500"]) == 2
    assert "--every at most --steps" in capsys.readouterr().err
