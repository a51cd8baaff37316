"""NumPy random generators as JSON-compatible values, for checkpoints of host-side state.

The environments (their initial-state generators), the host loop (its warm-up actions) and
the colored exploration noise each keep a NumPy generator that a checkpoint must continue
exactly; these two functions are the one way they save and restore it.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def random_state_to_json(rng: Any) -> Any:
    """A NumPy `RandomState` or `Generator` state as JSON-compatible values."""
    if hasattr(rng, "bit_generator"):
        return rng.bit_generator.state  # nested dicts of ints (Python ints are exact in JSON)
    name, keys, pos, has_gauss, cached = rng.get_state()
    return [name, [int(k) for k in keys], int(pos), int(has_gauss), float(cached)]


def random_state_from_json(rng: Any, state: Any) -> None:
    """Set `rng` (RandomState or Generator) to a state `random_state_to_json` returned."""
    if hasattr(rng, "bit_generator"):
        rng.bit_generator.state = state
    else:
        name, keys, pos, has_gauss, cached = state
        rng.set_state((name, np.asarray(keys, np.uint32), pos, has_gauss, cached))
