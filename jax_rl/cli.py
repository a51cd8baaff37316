"""Command-line pieces shared by the entry points: learner flags and error exits.

Every field of every learner's `Config` is a flag (`--actor_lr`, `--tau`, ...),
documented by the field's doc. A flag that the chosen policy does not have is
refused. All checks run before anything is compiled; a bad value prints one
line and exits with code 2.
"""

from __future__ import annotations

import argparse
import sys
from types import ModuleType
from typing import Any, NoReturn

from jax_rl import algos
from jax_rl.algos import common

EXIT_USAGE = 2


def fail(message: str) -> NoReturn:
    """Print `error: message` to stderr and exit with code 2."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


def _parse_sizes(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None


def _flag_type(default: Any) -> Any:
    if isinstance(default, tuple):
        return _parse_sizes
    if isinstance(default, bool):
        raise TypeError("boolean config fields are not supported as flags")
    return type(default)


def add_run_flags(parser: argparse.ArgumentParser, defaults: Any) -> None:
    """Flags both entry points share; `defaults` is the loop's default config."""
    add = parser.add_argument
    add("--seed", type=int, default=defaults.seed, help="random seed")
    add(
        "--max_timesteps",
        type=int,
        default=defaults.max_timesteps,
        help="environment steps in total, warm-up included",
    )
    add(
        "--start_timesteps",
        type=int,
        default=defaults.start_timesteps,
        help="uniform random environment steps before learning starts",
    )
    add("--batch_size", type=int, default=defaults.batch_size, help="transitions per update")
    add(
        "--replay_size",
        type=int,
        default=None,
        help="replay capacity (default: min(max_timesteps, 1M))",
    )
    add(
        "--eval_freq",
        type=int,
        default=defaults.eval_freq,
        help="environment steps between evaluations",
    )
    add("--eval_episodes", type=int, default=defaults.eval_episodes, help="episodes per evaluation")
    add(
        "--log_freq",
        type=int,
        default=defaults.log_freq,
        help="environment steps between rows of train.csv",
    )
    add("--save_dir", default=None, help="output folder (default: runs/<run name>)")
    add("--no_progress", action="store_true", help="hide the progress bar")


def build_loop_config(config_class: type, args: argparse.Namespace, **extra: Any) -> Any:
    """The loop config from the shared run flags plus `extra`, or a one-line error and exit 2."""
    try:
        return config_class(
            max_timesteps=args.max_timesteps,
            start_timesteps=args.start_timesteps,
            batch_size=args.batch_size,
            replay_size=args.replay_size,
            eval_freq=args.eval_freq,
            eval_episodes=args.eval_episodes,
            log_freq=args.log_freq,
            seed=args.seed,
            **extra,
        )
    except ValueError as e:
        fail(str(e))


def add_policy_flags(parser: argparse.ArgumentParser) -> None:
    """--policy and one flag per learner hyperparameter (default: the Config default)."""
    parser.add_argument(
        "--policy", default="TD3", choices=algos.POLICY_CHOICES, help="the learner to train"
    )
    seen: dict[str, str] = {}
    for name, module in algos.ALGORITHMS.items():
        group = parser.add_argument_group(f"{name} hyperparameters")
        for field, default, doc, _ in common.describe(module.Config):
            if field in seen:
                continue
            owners = [n for n, m in algos.ALGORITHMS.items() if field in _fields(m)]
            shown = default if len(owners) == 1 else "per policy"
            text = ",".join(map(str, default)) if isinstance(default, tuple) else shown
            group.add_argument(
                f"--{field}",
                type=_flag_type(default),
                default=None,
                help=f"{doc} (default: {text}; {'/'.join(owners)})",
            )
            seen[field] = name


def _fields(module: ModuleType) -> set[str]:
    return {name for name, *_ in common.describe(module.Config)}


def build_algo_config(args: argparse.Namespace) -> tuple[ModuleType, Any]:
    """The chosen learner module and its Config, or a one-line error and exit 2."""
    try:
        module = algos.get(args.policy)
    except algos.UnknownPolicyError as e:
        fail(str(e))
    own = _fields(module)
    values: dict[str, Any] = {}
    for other in algos.ALGORITHMS.values():
        for field in _fields(other):
            value = getattr(args, field, None)
            if value is None:
                continue
            if field not in own:
                fail(f"--{field} does not apply to --policy {args.policy}")
            values[field] = value
    try:
        return module, module.Config(**values)
    except ValueError as e:
        fail(str(e))
