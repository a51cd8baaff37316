"""Shared test settings: small networks keep the suite fast on 2 cores."""

import os

# Tests run on the CPU even where a GPU is visible, for determinism and speed
# of compilation; the device pipeline's own GPU checks are run by hand.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
