"""Keeps known third-party start-up noise off the user's screen.

Three messages reach a user's terminal before the first line of ours, none of
which they can act on:

- `mujoco.mjx` prints "Failed to import warp: ..." and "Failed to import
  mujoco_warp: ..." on stdout when the optional GPU package `warp` is absent
  (it is not needed: our pipelines use MJX's JAX implementation). The lock
  installs `warp-lang`, which MuJoCo Playground requires, but
  `jax_rl.envs.brax.load_mjx` holds it off while MJX loads (it is slow to import)
  and drops these lines itself; they remain for MJX loaded any other way;
- MuJoCo's compiler warns that Brax's XML, and Playground's cheetah, use the
  deprecated `settotalmass` attribute (the model compiles as intended);
- Brax warns on every environment it builds that it is no longer maintained.

`install()` filters exactly these messages, nothing else: every other line on
stdout, every other MuJoCo warning (re-printed on stderr) and every other
Python warning still shows.
"""

from __future__ import annotations

import re
import sys
import warnings
from typing import TextIO

# Whole stdout lines dropped; each names the package that prints it.
DROPPED_LINES = (
    re.compile(r"^Failed to import (mujoco_)?warp: "),  # mujoco.mjx.warp, without warp-lang
)
# MuJoCo compiler warnings dropped (substrings of the message).
DROPPED_MUJOCO_WARNINGS = ("compiler attribute 'settotalmass' is deprecated",)
# Python warnings dropped: (message regex, category).
DROPPED_WARNINGS = ((r"Brax System, piplines and environments are not actively", UserWarning),)


class LineFilter:
    """A text stream that passes every complete line to `stream` except those matching
    one of `patterns`. A partial line waits for its newline (or a flush)."""

    def __init__(self, stream: TextIO, patterns: tuple[re.Pattern[str], ...]) -> None:
        self.stream = stream
        self.patterns = patterns
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        kept = [line for line in lines if not self._dropped(line)]
        if kept:
            self.stream.write("".join(f"{line}\n" for line in kept))
        return len(text)

    def _dropped(self, line: str) -> bool:
        return any(p.search(line) for p in self.patterns)

    def flush(self) -> None:
        if self._pending and not self._dropped(self._pending):
            self.stream.write(self._pending)
            self._pending = ""
        self.stream.flush()

    def __getattr__(self, name: str) -> object:
        return getattr(self.stream, name)  # isatty, fileno, encoding, ...


def _mujoco_warning(message: str) -> None:
    if not any(text in message for text in DROPPED_MUJOCO_WARNINGS):
        print(f"MuJoCo warning: {message.strip()}", file=sys.stderr)


def install() -> None:
    """Filter the known start-up messages for the rest of the process (idempotent)."""
    if not isinstance(sys.stdout, LineFilter):
        sys.stdout = LineFilter(sys.stdout, DROPPED_LINES)
    for message, category in DROPPED_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category)
    import mujoco

    mujoco.set_mju_user_warning(_mujoco_warning)
