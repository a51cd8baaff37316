"""docs/benchmarks/exploration_floor.py: the processes a user names on its command line."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "benchmarks" / "exploration_floor.py"


def _floor():
    spec = importlib.util.spec_from_file_location("exploration_floor", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_processes_parse_std_beta_pairs_and_name_them():
    floor = _floor()
    rows = floor._processes(argparse.ArgumentParser(), "1:2,2:2,0.5:1,1:0,1:1.5")
    assert rows == [
        ("red 1", 1.0, 2.0), ("red 2", 2.0, 2.0), ("pink 0.5", 0.5, 1.0),
        ("white 1", 1.0, 0.0), ("beta 1.5 1", 1.0, 1.5),
    ]  # fmt: skip


@pytest.mark.parametrize("text", ["2", "2:x", "0:2", "1:-1", "1:2:3"])
def test_a_bad_process_ends_the_run_with_exit_2(text, capsys):
    floor = _floor()
    with pytest.raises(SystemExit) as ended:
        floor._processes(argparse.ArgumentParser(prog="exploration_floor.py"), text)
    assert ended.value.code == 2
    assert "--processes" in capsys.readouterr().err
