"""What CrossQ (TD3's and SAC's dm_control entry) costs a host-loop training step.

    .venv/bin/python docs/benchmarks/crossq_step.py [--out docs/benchmarks/crossq_step.json]

Times TD3 and SAC as published and with the entry's CrossQ (BatchRenorm actor and
critics, no target networks, policy delay 3; 256-256 networks both ways) on
cartpole-swingup and cheetah-run with `jax_rl.tools.benchmark.bench_host_step`, the timing of
`make bench` (one environment step plus one jitted insert-sample-update-act call, batch
256) with its settings: the median of 5 blocks of 1000 steps after 500 of warm-up. Prints
seconds per 1000 steps and the ratio to the plain learner. Run it on quiet cores.
"""

import argparse
import dataclasses
import json
from pathlib import Path

from jax_rl.tools import benchmark

TASKS = (("cartpole", "swingup"), ("cheetah", "run"))
SETTINGS = benchmark.BenchSettings()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=None, help="also write the rows as JSON here")
    args = parser.parse_args()
    rows = []
    for domain, task in TASKS:
        settings = dataclasses.replace(SETTINGS, domain_name=domain, task_name=task)
        for name in ("TD3", "SAC"):
            plain = benchmark.bench_host_step(name, settings, label=name)
            crossq = benchmark.bench_host_step(
                name, settings, label=f"{name} + CrossQ", **benchmark.CROSSQ_OVERRIDES
            )
            for row in (plain, crossq):
                row["task"] = f"{domain}-{task}"
                rows.append(row)
            ratio = crossq["seconds_per_1000_median"] / plain["seconds_per_1000_median"]
            print(
                f"{domain}-{task} {name}: {plain['seconds_per_1000_median']:.2f} s / 1000 steps, "
                f"with CrossQ {crossq['seconds_per_1000_median']:.2f} ({ratio:.2f}x)",
                flush=True,
            )
    if args.out:
        Path(args.out).write_text(
            json.dumps({"machine": benchmark.machine(), "rows": rows}, indent=1)
        )


if __name__ == "__main__":
    main()
