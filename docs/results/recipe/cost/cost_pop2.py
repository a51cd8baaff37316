"""R13's populations, mapped and vmapped, against one agent (docs/recipe.md, R13's cost)."""

from jax_rl.tools import benchmark as b

s = b.BenchSettings(steps_per_block=500, num_blocks=2, warmup_steps=300)
entry = {**b.CROSSQ_ENTRY, "alpha_lr": 1e-3}
sale = {"representation": "sale", "encoder_hidden_sizes": (128, 128), "embedding_size": 128}
share = {
    "init_alpha": 0.1,
    "alpha_lr": 3e-4,
    "hold_exploration": True,
    "exploration_share": 0.1,
    "share_horizon": 3,
}
r13 = {**entry, **sale, **share, "noise_color": 1.0, "action_repeat": 2, "updates_per_step": 2}
for label, o in [
    ("R13 DMC 3 map", {**r13, "num_agents": 3, "population_loop": "map"}),
    ("R13 DMC 3 vmap", {**r13, "num_agents": 3, "population_loop": "vmap"}),
    ("R13 DMC 1", r13),
]:
    r = b.bench_host_step("SAC", s, label=label, **o)
    print(
        f"{label}: {r['seconds_per_1000_median']:.2f} {[round(x, 2) for x in r['blocks']]}",
        flush=True,
    )
