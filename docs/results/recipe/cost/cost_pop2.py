"""R13's populations, mapped and vmapped, against one agent (docs/recipe.md, R13's cost)."""

import r13_settings

from jax_rl.tools import benchmark as b

s = b.BenchSettings(steps_per_block=500, num_blocks=2, warmup_steps=300)
r13 = r13_settings.r13_dmc
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
