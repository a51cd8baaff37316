import json
import time

import jax
import jax.numpy as jnp
import numpy as np

from jax_rl import benchmark, timing


def busy(x):
    """About 0.2 GFLOP of dependent matmuls: real work that dispatch returns before."""
    for _ in range(8):
        x = jnp.tanh(x @ x)
    return x


def test_asynchronous_work_is_timed_at_its_real_duration():
    f = jax.jit(busy)
    x = jnp.ones((256, 256)) * 1e-3
    jax.block_until_ready(f(x))
    start = time.perf_counter()
    for _ in range(20):
        jax.block_until_ready(f(x))
    real = (time.perf_counter() - start) / 20

    state = {"x": x}

    def step():
        state["x"] = f(state["x"])
        return state["x"]

    result = timing.time_steps(step, steps_per_block=20, num_blocks=3, warmup_steps=2)
    per_step = min(result.block_seconds) / 20
    assert per_step > 0.7 * real, (per_step, real)


def test_compile_time_is_kept_out_of_steady_state():
    calls = {"n": 0}

    def step():
        calls["n"] += 1
        if calls["n"] == 1:
            time.sleep(0.5)  # stands in for compilation
        return jnp.zeros(())

    result = timing.time_steps(step, steps_per_block=10, num_blocks=3, warmup_steps=1)
    assert result.first_call_seconds >= 0.5
    assert max(result.block_seconds) < 0.25
    median, mean, std = result.per_1000()
    assert median < 25.0 and std >= 0.0


def test_compiled_flops_counts_a_matmul():
    flops = timing.compiled_flops(
        jax.jit(lambda a, b: a @ b), jnp.ones((64, 32)), jnp.ones((32, 16))
    )
    assert flops is None or abs(flops - 2 * 64 * 32 * 16) / (2 * 64 * 32 * 16) < 0.1


def test_quick_benchmark_writes_valid_json(tmp_path):
    assert benchmark.main(["--quick", "--out", str(tmp_path)]) == 0
    payload = json.loads((tmp_path / "host.json").read_text())
    rows = {row["policy"]: row for row in payload["host_loop"]}
    assert set(rows) == {"TD3", "SAC"}
    for row in rows.values():
        assert row["seconds_per_1000_median"] > 0 and np.isfinite(row["seconds_per_1000_median"])
        assert row["compile_seconds"] > 0
    assert payload["machine"]["cores"] >= 1 and payload["matmul_flops_per_second"] > 0
    assert "| TD3 |" in (tmp_path / "host.md").read_text()
