"""Commands around training, not part of it: the returns tables (results), their published
columns (published) and their aggregates over tasks (aggregates), hyperparameter search on
Optuna (tune, with its search spaces in search_space), the benchmarks (benchmark,
bench_peers, timing), the robustness checks (chaos, soak) and the accelerator check
(gpu_check). Each is `python -m jax_rl.tools.<name>`."""
