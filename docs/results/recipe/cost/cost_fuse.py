"""R13's 3-agent mapped population and one R13 agent, timed with the jax_rl this Python
imports (docs/recipe.md, "The mapped population's updates in one body"). To set two trees
side by side, run it once in each: `PYTHONPATH=<tree> python cost_fuse.py "<label>"`.
A label starting with `one` times one agent."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import r13_settings  # noqa: E402

import jax_rl  # noqa: E402
from jax_rl.tools import benchmark as b  # noqa: E402

label = sys.argv[1] if len(sys.argv) > 1 else "3 map"
s = b.BenchSettings(steps_per_block=500, num_blocks=2, warmup_steps=300)
r13 = r13_settings.r13_dmc
settings = r13 if label.startswith("one") else {**r13, "num_agents": 3, "population_loop": "map"}
r = b.bench_host_step("SAC", s, label=label, **settings)
blocks = [round(x, 2) for x in r["blocks"]]
print(f"{label} ({jax_rl.__file__}): {r['seconds_per_1000_median']:.2f} {blocks}", flush=True)
