"""Commands around training, not part of it: the returns tables (results), the
benchmarks (benchmark, bench_peers, timing), the robustness checks (chaos, soak) and the
accelerator check (gpu_check). Each is `python -m jax_rl.tools.<name>`."""
