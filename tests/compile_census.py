"""What the test suite compiles: a census of a JAX persistent compilation cache.

    JAX_RL_TEST_CACHE=/tmp/suite-cache make test      # keeps the session's cache
    .venv/bin/python tests/compile_census.py /tmp/suite-cache

Every program the suite compiles goes into the session's cache (tests/conftest.py), and
JAX stores each entry with the seconds its compilation took (whole seconds, rounded
down). Summed, they are the compile work no test order or worker count can avoid: the
suite's floor on N cores is at least that sum over N. Programs are grouped by the name of
the jitted function; a name with many entries is one program compiled at many shapes or
settings, which tests could share by using the same ones.
"""

from __future__ import annotations

import argparse
import collections
import sys
import zlib
from pathlib import Path

_TIME_BYTES = 4  # jax._src.compilation_cache: a big-endian int before the executable


def compile_seconds(entry: bytes) -> int:
    """The compile time stored at the head of one cache entry (JAX compresses entries with
    zstd when it can import it, else zlib)."""
    try:
        raw = zlib.decompress(entry)
    except zlib.error:
        try:
            from compression import zstd  # type: ignore[import-not-found]
        except ImportError:
            import zstandard  # type: ignore[import-not-found]

            raw = zstandard.ZstdDecompressor().decompress(entry)
        else:
            raw = zstd.decompress(entry)
    return int.from_bytes(raw[:_TIME_BYTES], byteorder="big")


def census(folder: Path) -> dict[str, list[int]]:
    """Compile seconds of every entry, by the jitted function's name."""
    programs: dict[str, list[int]] = collections.defaultdict(list)
    for path in folder.glob("*-cache"):
        name = path.name[: -len("-cache")].rsplit("-", 1)[0]
        programs[name].append(compile_seconds(path.read_bytes()))
    return programs


def report(programs: dict[str, list[int]], top: int, cores: int) -> str:
    total = sum(sum(s) for s in programs.values())
    entries = sum(len(s) for s in programs.values())
    under = sum(1 for s in programs.values() for t in s if t == 0)
    lines = [
        f"{entries} programs, {total} s of compilation ({total / 60:.1f} min; entries under "
        f"a second count 0, {under} of them): at least {total / cores / 60:.1f} min on "
        f"{cores} cores",
        "",
        f"{'seconds':>8} {'programs':>8}  name",
    ]
    ranked = sorted(programs.items(), key=lambda kv: -sum(kv[1]))
    for name, seconds in ranked[:top]:
        lines.append(f"{sum(seconds):8d} {len(seconds):8d}  {name}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="a JAX persistent compilation cache")
    parser.add_argument("--top", type=int, default=25, help="names to list")
    parser.add_argument("--cores", type=int, default=2, help="cores the suite runs on")
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        print(f"error: {args.folder} is not a folder", file=sys.stderr)
        return 2
    programs = census(args.folder)
    if not programs:
        print(f"error: no cache entries in {args.folder}", file=sys.stderr)
        return 2
    print(report(programs, args.top, args.cores))
    return 0


if __name__ == "__main__":
    sys.exit(main())
