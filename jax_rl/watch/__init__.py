"""Looking at trained agents and runs: evaluate a saved agent, render its video, plot
learning curves. Each is `python -m jax_rl.watch.<name>`."""
