"""R13's cost against SAC's CrossQ entry, per 1000 frames, one run on a quiet machine.

Run from the repository root: `.venv/bin/python docs/results/recipe/cost/cost_r13.py OUT.json`
(`--quick`: tiny sizes, the same code path)."""

import json
import sys

import r13_settings

from jax_rl.tools import benchmark as b

quick = "--quick" in sys.argv
settings = (
    b.BenchSettings(steps_per_block=50, num_blocks=2, warmup_steps=20, prefill=300)
    if quick
    else b.BenchSettings(num_blocks=3)
)
entry, sale, share = r13_settings.entry, r13_settings.sale, r13_settings.share
rows = [
    ("SAC, CrossQ entry, K=1 U=1", dict(entry)),
    ("SAC, CrossQ entry, K=2 U=2", {**entry, "action_repeat": 2, "updates_per_step": 2}),
    ("R12: entry + SALE 128, K=1 U=1", {**entry, **sale}),
    ("R13 on Gymnasium (K=1 U=1)", {**entry, **sale, **share, "noise_color": 1.0}),
    ("R13 on DM Control (K=2 U=2)", r13_settings.r13_dmc),
    (
        "R13 on DM Control, 3 agents, map",
        {**r13_settings.r13_dmc, "num_agents": 3, "population_loop": "map"},
    ),
]
out = []
for label, o in rows:
    r = b.bench_host_step("SAC", settings, label=label, **o)
    r.pop("blocks", None)
    out.append(r)
    gflop = r["flops_per_update"] / 1e9 if r["flops_per_update"] else float("nan")
    seconds = r["seconds_per_1000_median"]
    print(f"{label}: {seconds:.2f} s / 1000 frames (GFLOP/update {gflop:.3f})", flush=True)
paths = [a for a in sys.argv[1:] if not a.startswith("--")]  # OUT.json, wherever it is given
with open(paths[0] if paths else "cost_r13.json", "w") as f:
    json.dump(out, f, indent=1)
