"""jax_rl: off-policy continuous-control learners (TD3, SAC, MPO) written end to end in JAX.

From Python: `jax_rl.train(policy, env, **settings)` runs what the command line runs and
returns a `TrainResult` (docs/api.md); the learners are `jax_rl.algos.td3`, `sac`, `mpo`.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["TrainResult", "read_result", "train"]


def __getattr__(name: str) -> Any:
    # Late: `import jax_rl` stays cheap (no JAX) until the API is used.
    if name in __all__:
        from jax_rl import api

        return getattr(api, name)
    raise AttributeError(f"module 'jax_rl' has no attribute {name!r}")
