"""The environment's share of a host-loop training step: one environment step alone.

    .venv/bin/python docs/benchmarks/env_step.py

Steps dm_control's cartpole-swingup and Gymnasium's HalfCheetah-v5 through our
adapters (the objects the host loop steps) with uniform random actions, resets
included, and prints milliseconds per step: the median of 3 blocks of 20,000.
Compare with the training step in peers.md / host.md.
"""

import time

import numpy as np

from jax_rl.envs.dm_control import DMControlEnv
from jax_rl.envs.gymnasium import GymnasiumEnv

STEPS = 20_000
BLOCKS = 3


def ms_per_step(env, rng: np.random.Generator) -> float:
    actions = rng.uniform(-1.0, 1.0, (STEPS, env.action_size)).astype(np.float32)
    env.reset()
    start = time.perf_counter()
    for action in actions:
        if env.step(action).last:
            env.reset()
    return (time.perf_counter() - start) / STEPS * 1e3


def main() -> None:
    from jax_rl.io import quiet

    quiet.install()  # after dm_control's import, which sets MuJoCo's warning handler
    tasks = {
        "dm_control cartpole-swingup": lambda: DMControlEnv("cartpole", "swingup", seed=0),
        "Gymnasium HalfCheetah-v5": lambda: GymnasiumEnv("HalfCheetah-v5", seed=0),
    }
    for name, make in tasks.items():
        env, rng = make(), np.random.default_rng(0)
        blocks = [ms_per_step(env, rng) for _ in range(BLOCKS)]
        each = ", ".join(f"{b:.4f}" for b in blocks)
        print(f"{name}: {np.median(blocks):.4f} ms per step (blocks: {each})")


if __name__ == "__main__":
    main()
