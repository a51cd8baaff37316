"""The docs point at what exists: every relative link resolves, and every command they
show (`python -m jax_rl...`, `python jax_rl/<script>.py`, in the docs and the Makefile)
names a module or script that answers `--help`."""

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted({ROOT / "README.md", *ROOT.glob("*.md"), *(ROOT / "docs").rglob("*.md")})
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
MODULE = re.compile(r"python3? -m (jax_rl[\w.]*)")
SCRIPT = re.compile(r"python3? (jax_rl/[\w/]+\.py)")


def documented(pattern: re.Pattern) -> set[str]:
    texts = [page.read_text() for page in PAGES] + [(ROOT / "Makefile").read_text()]
    return {match for text in texts for match in pattern.findall(text)}


def test_every_relative_link_in_the_docs_resolves():
    broken = [
        f"{page.relative_to(ROOT)}: {target}"
        for page in PAGES
        for target in LINK.findall(page.read_text())
        if not re.match(r"[a-z]+:", target)  # https:, mailto:
        and not target.startswith("#")
        and not (page.parent / target.split("#")[0]).exists()
    ]
    assert not broken, "\n".join(broken)


def test_the_docs_show_the_commands_users_run():
    """The patterns find what they should (a test of the two tests below)."""
    assert {"jax_rl.tools.results", "jax_rl.tools.benchmark", "jax_rl.watch.render"} <= (
        documented(MODULE)
    )
    assert "jax_rl/main_dm_control.py" in documented(SCRIPT)


def run_help(command: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    return subprocess.run(
        [sys.executable, *command, "--help"], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


@pytest.mark.parametrize("pattern", [MODULE, SCRIPT], ids=["python -m", "scripts"])
def test_every_documented_command_answers_help(pattern):
    names = sorted(documented(pattern))
    commands = [["-m", name] if pattern is MODULE else [name] for name in names]
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(run_help, commands))
    failed = [
        f"{' '.join(command)} --help: exit {result.returncode}: {result.stderr.strip()[-300:]}"
        for command, result in zip(commands, done, strict=True)
        if result.returncode != 0 or "usage:" not in result.stdout
    ]
    assert not failed, "\n".join(failed)
