"""Shared test settings: small networks keep the suite fast on 2 cores."""

import os
import shutil
import tempfile

# Tests run on the CPU even where a GPU is visible, for determinism and speed
# of compilation; the device pipeline's own GPU checks are run by hand.
os.environ.setdefault("JAX_PLATFORMS", "cpu")

# One persistent compilation cache for the whole session: many tests compile the same
# programs (in the test's process, in the xdist workers and in the scripts they start),
# and a program loaded from the cache is the one compiled (results are identical). Every
# program goes in, also those that compile in under a second (by default not cached). The
# controller (or a run without xdist) makes the folder before the workers start; they and
# every subprocess inherit it through the environment.
if "JAX_RL_TEST_CACHE" not in os.environ:
    os.environ["JAX_RL_TEST_CACHE"] = tempfile.mkdtemp(prefix="jax_rl-test-cache-")
    _MADE_HERE = True
else:
    _MADE_HERE = False
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.environ["JAX_RL_TEST_CACHE"])
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")


def pytest_unconfigure(config):
    if _MADE_HERE and not hasattr(config, "workerinput"):
        shutil.rmtree(os.environ["JAX_RL_TEST_CACHE"], ignore_errors=True)
