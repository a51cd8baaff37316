"""tests/compile_census.py reads the compile times JAX stores in its persistent cache."""

import os
import zlib

import jax
import jax.numpy as jnp
from compile_census import census, compile_seconds, main, report


def entry(seconds: int, executable: bytes = b"serialized executable") -> bytes:
    """A cache entry as JAX writes one: the compile time, big-endian, then the executable,
    compressed (zlib where zstd is not installed, as here)."""
    return zlib.compress(seconds.to_bytes(4, "big") + executable)


def test_sums_the_stored_compile_times_by_program_name(tmp_path, capsys):
    (tmp_path / "jit_learn-3f2a-cache").write_bytes(entry(12))
    (tmp_path / "jit_learn-9b1c-cache").write_bytes(entry(30))
    (tmp_path / "jit_one-77aa-cache").write_bytes(entry(0))
    (tmp_path / "jit_one-77aa-atime").write_bytes(b"not an entry")
    assert compile_seconds(entry(70_000)) == 70_000
    programs = census(tmp_path)
    assert {name: sorted(s) for name, s in programs.items()} == {
        "jit_learn": [12, 30],
        "jit_one": [0],
    }
    text = report(programs, top=5, cores=2)
    assert text.splitlines()[0].startswith("3 programs, 42 s of compilation")
    assert "at least 0.3 min on 2 cores" in text
    assert text.splitlines()[3].split() == ["42", "2", "jit_learn"]
    assert main([str(tmp_path / "missing")]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_reads_an_entry_that_jax_itself_wrote(tmp_path):
    jax.config.update("jax_compilation_cache_dir", str(tmp_path))
    from jax.experimental.compilation_cache import compilation_cache

    try:
        compilation_cache.reset_cache()
        jax.jit(lambda x: jnp.sin(x) * 41.0 + 1.0)(jnp.arange(7.0)).block_until_ready()
        programs = census(tmp_path)
        assert sum(len(s) for s in programs.values()) >= 1
        assert all(0 <= t < 60 for s in programs.values() for t in s)
    finally:
        jax.config.update("jax_compilation_cache_dir", os.environ.get("JAX_COMPILATION_CACHE_DIR"))
        compilation_cache.reset_cache()
