"""Lower bounds on the host-loop and Brax-pipeline step times on this machine.

    .venv/bin/python docs/benchmarks/floor.py > docs/benchmarks/floor.md

Measures what the speed targets of issues 2 and 3 rest on: the rate of XLA's CPU
backend on the matrix products our 256-256 networks are made of, whether two
independent products in one program run at the same time, and the cost of one
dm_control cartpole step. From those and the FLOPs per update it prints the
least time a step could take if every product ran at the best measured rate and
nothing else (elementwise work, Adam, sampling, dispatch) cost anything.
"""

from __future__ import annotations

import os
import time

import jax
import jax.numpy as jnp
import numpy as np

CHAIN = 8  # products per timed program


def median_seconds(fn, *args, calls: int = 200, repeats: int = 5) -> float:
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            out = fn(*args)
        jax.block_until_ready(out)
        times.append((time.perf_counter() - start) / calls)
    return float(np.median(times))


def chain(x, w):
    for _ in range(CHAIN):
        x = jnp.tanh(x @ w)
    return x


def two_chains(x, w, y, v):
    for _ in range(CHAIN):
        x, y = jnp.tanh(x @ w), jnp.tanh(y @ v)
    return x, y


def twin_chain(x, w):  # the twin critics' layer: one batched product [2, 256, 256]
    for _ in range(CHAIN):
        x = jnp.tanh(jnp.einsum("ebh,ehk->ebk", x, w))
    return x


def adam_ms(sizes: list[tuple[int, ...]]) -> float:
    """One Adam step (optax) on parameters of these shapes, alone in its program."""
    import optax

    params = [jnp.ones(shape) for shape in sizes]
    adam = optax.adam(3e-4)

    def step(params, state):
        updates, state = adam.update(params, state, params)
        return optax.apply_updates(params, updates), state

    fn = jax.jit(step, donate_argnums=(0, 1))
    state = adam.init(params)
    params, state = fn(params, state)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(500):
            params, state = fn(params, state)
        jax.block_until_ready(params)
        times.append((time.perf_counter() - start) / 500)
    return 1e3 * float(np.median(times))


def mlp_shapes(inputs: int, outputs: int, members: int = 1) -> list[tuple[int, ...]]:
    lead = (members,) if members > 1 else ()
    dims = [inputs, 256, 256, outputs]
    return [lead + (a, b) for a, b in zip(dims[:-1], dims[1:], strict=True)] + [
        lead + (b,) for b in dims[1:]
    ]


def forward(batch: int, inputs: int, outputs: int) -> int:
    """Matrix-product FLOPs of a 256-256 MLP's forward pass (= its weight gradients)."""
    return 2 * batch * (inputs * 256 + 256 * 256 + 256 * outputs)


def input_gradients(batch: int, outputs: int, inputs: int = 0) -> int:
    """FLOPs of the gradients with respect to the layers' inputs (the first layer's input
    only when `inputs` is given)."""
    return 2 * batch * (256 * 256 + 256 * outputs + inputs * 256)


def update_gflop(algo: str, obs: int, action: int, batch: int = 256) -> float:
    """Matrix-product GFLOP per training step, counted from the networks' shapes: twin
    critics, the target networks' forward passes, and for TD3 the actor update every
    second step."""
    head = action if algo == "TD3" else 2 * action  # SAC's actor outputs mean and log std
    critic_in = obs + action
    critic_step = (
        forward(batch, obs, head)  # the (target) actor at s'
        + 2 * forward(batch, critic_in, 1)  # target critics
        + 2 * (2 * forward(batch, critic_in, 1) + input_gradients(batch, 1))  # fwd + bwd
    )
    critics_in_actor_step = 1 if algo == "TD3" else 2  # TD3's actor loss uses Q1 only
    actor_step = (
        2 * forward(batch, obs, head)
        + input_gradients(batch, head)
        + critics_in_actor_step
        * (forward(batch, critic_in, 1) + input_gradients(batch, 1, critic_in))
    )
    share = 0.5 if algo == "TD3" else 1.0
    return (critic_step + share * actor_step) / 1e9


def env_step_ms() -> float:
    from jax_rl.envs.dm_control import DMControlEnv

    env = DMControlEnv("cartpole", "swingup", seed=0)
    env.reset()
    action = np.zeros(1, np.float32)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(2000):
            if env.step(action).last:
                env.reset()
        times.append((time.perf_counter() - start) / 2000)
    return 1e3 * float(np.median(times))


def main() -> None:
    keys = jax.random.split(jax.random.key(0), 4)
    x = jax.random.normal(keys[0], (256, 256))
    w = 0.05 * jax.random.normal(keys[1], (256, 256))
    flop = 2 * 256**3
    one = median_seconds(jax.jit(chain), x, w)
    two = median_seconds(jax.jit(two_chains), x, w, x + 1, w)
    twin = median_seconds(jax.jit(twin_chain), jnp.stack([x, x]), jnp.stack([w, w]))
    big = jax.random.normal(keys[2], (2048, 2048))
    large = median_seconds(jax.jit(jnp.matmul), big, big, calls=20)
    rate_one = CHAIN * flop / one / 1e9
    rate_twin = CHAIN * 2 * flop / twin / 1e9
    rate_large = 2 * 2048**3 / large / 1e9
    env_ms = env_step_ms()
    best = max(rate_one, rate_twin)

    print("# Floors: the least a step could take on this machine\n")
    print(f"{os.cpu_count()} cores, JAX {jax.__version__}, `python docs/benchmarks/floor.py`.\n")
    print("| measurement | value |")
    print("|---|---|")
    print(f"| 256x256x256 product (+tanh), chain of {CHAIN} | {rate_one:.0f} GFLOP/s |")
    print(f"| twin-critic product [2, 256, 256] x [2, 256, 256] | {rate_twin:.0f} GFLOP/s |")
    print(f"| 2048^3 product | {rate_large:.0f} GFLOP/s |")
    print(
        f"| two independent chains in one program / one chain | {two / one:.2f}x the time "
        "(2.00: run one after the other) |"
    )
    print(f"| dm_control cartpole-swingup step | {env_ms:.3f} ms |")
    print()
    critic_adam = adam_ms(mlp_shapes(6, 1, members=2))  # cartpole: obs 5, action 1
    actor_adam = adam_ms(mlp_shapes(5, 1))
    cheetah_adam = adam_ms(mlp_shapes(24, 1, members=2)) + adam_ms(mlp_shapes(18, 12))
    rows = [
        (
            "TD3, host loop (target 2.2 ms)",
            update_gflop("TD3", 5, 1),
            critic_adam + actor_adam / 2,
            env_ms,
        ),
        (
            "SAC, host loop (target 3.3 ms)",
            update_gflop("SAC", 5, 1),
            critic_adam + actor_adam,
            env_ms,
        ),
        # Brax halfcheetah (obs 18, action 6): one env step per update; physics alone
        # ran at 2,480 steps/s (issue 3).
        (
            "SAC, Brax pipeline (target 1.3 x 253 updates/s: 3.04 ms)",
            update_gflop("SAC", 18, 6),
            cheetah_adam,
            1e3 / 2480,
        ),
    ]
    print(
        "| step | product GFLOP | products at the best rate (ms) | Adam (ms) "
        "| environment (ms) | floor (ms) |"
    )
    print("|---|---|---|---|---|---|")
    for name, gflop, adam, env in rows:
        products = 1e3 * gflop / best
        floor = products + adam + env
        print(f"| {name} | {gflop:.3f} | {products:.2f} | {adam:.2f} | {env:.2f} | {floor:.2f} |")
    print(
        "\nThe floor is the matrix products of one training step, counted from the "
        f"networks' shapes and run at {best:.0f} GFLOP/s (the best rate above), plus the Adam "
        "steps timed alone and the environment step; it leaves out every other "
        "elementwise operation, the replay sampling and the dispatch."
    )


if __name__ == "__main__":
    main()
