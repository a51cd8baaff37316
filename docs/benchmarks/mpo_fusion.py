"""What MPO's CPU compiler options buy: the host loop's learning call with and without them.

    taskset -c 0 env XLA_FLAGS=--xla_cpu_multi_thread_eigen=false \
        .venv/bin/python docs/benchmarks/mpo_fusion.py

Times the host loop's one jitted call per step (`loops/host.py`: replay insert, batch
draw, MPO update, next action) for populations of 1 and 3 agents at cartpole-swingup's
sizes (O 5, A 1) and walker-walk's (O 24, A 6), with the dm_control preset's settings,
once compiled with XLA's defaults and once with `mpo.CPU_COMPILER_OPTIONS`. Prints
milliseconds per call, the median of 3 blocks of 100 calls. Run it on one otherwise idle
core (as above) so that both columns see the same machine.
"""

import statistics
import time

import jax
import jax.numpy as jnp

from jax_rl import algos
from jax_rl.algos import mpo
from jax_rl.core.transition import Transition
from jax_rl.loops import host

CALLS = 100
BLOCKS = 3
SIZES = {"cartpole-swingup (O 5, A 1)": (5, 1), "walker-walk (O 24, A 6)": (24, 6)}


def ms_per_call(obs_size: int, action_size: int, agents: int, tuned: bool) -> float:
    config = mpo.Config(
        input_layer="layernorm", target_update_period=100, epsilon_std=1e-5
    )  # the dm_control preset (n_step changes only what the buffer stores)
    fns = host.make_step_functions(mpo, 256)
    if not tuned:
        learn = jax.jit(fns.learn.__wrapped__, donate_argnums=0)
    else:
        learn = fns.learn
    learner = host.init_population(
        mpo, [config] * agents, list(range(agents)), obs_size, action_size, 10_000, 256
    )
    learner = learner.replace(replay=learner.replay.replace(size=learner.replay.size + 5_000))
    row = Transition(
        obs=jnp.ones((agents, obs_size)),
        action=jnp.zeros((agents, action_size)),
        reward=jnp.ones(agents),
        discount=jnp.ones(agents),
        next_obs=jnp.ones((agents, obs_size)),
    )
    obs = jnp.ones((agents, obs_size))
    learner, action = learn(learner, row, obs)  # compile
    jax.block_until_ready(action)
    blocks = []
    for _ in range(BLOCKS):
        start = time.perf_counter()
        for _ in range(CALLS):
            learner, action = learn(learner, row, obs)
            action = jax.device_get(action)  # the host loop reads every action
        blocks.append((time.perf_counter() - start) / CALLS * 1e3)
    return statistics.median(blocks)


def main() -> None:
    assert algos.compiler_options(mpo), "these options apply on a CPU backend only"
    print(f"MPO options on a CPU: {mpo.CPU_COMPILER_OPTIONS}")
    print("| sizes | agents | XLA defaults, ms | MPO's options, ms | speed-up |")
    print("|---|---|---|---|---|")
    for name, (obs_size, action_size) in SIZES.items():
        for agents in (1, 3):
            default = ms_per_call(obs_size, action_size, agents, tuned=False)
            tuned = ms_per_call(obs_size, action_size, agents, tuned=True)
            print(f"| {name} | {agents} | {default:.1f} | {tuned:.1f} | {default / tuned:.2f}x |")


if __name__ == "__main__":
    main()
