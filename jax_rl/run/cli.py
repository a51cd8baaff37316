"""Command-line pieces shared by the entry points: learner flags and error exits.

Every field of every learner's `Config` is a flag (`--actor_lr`, `--tau`, ...),
documented by the field's doc. A flag that the chosen policy does not have is
refused. All checks run before anything is compiled; a bad value prints one
line and exits with code 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, NoReturn, TypeVar

from jax_rl import algos
from jax_rl.algos import common

EXIT_USAGE = 2
EXIT_NON_FINITE = 3
DEFAULT_CHECKPOINT_EVERY = 10_000
T = TypeVar("T")


class UsageError(SystemExit):
    """A bad flag or value: exit code 2 for a command, a ValueError for `jax_rl.train`
    (its one-line `message`)."""

    def __init__(self, message: str) -> None:
        super().__init__(EXIT_USAGE)
        self.message = message


def fail(message: str) -> NoReturn:
    """Print `error: message` to stderr and exit with code 2 (`UsageError`)."""
    print(f"error: {message}", file=sys.stderr)
    raise UsageError(message)


def _parse_sizes(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None


def _parse_floats(text: str) -> list[float]:
    """One finite value, or several comma-separated ones (a sweep)."""
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number or comma-separated numbers, got {text!r}"
        ) from None
    if not all(math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f"expected finite numbers, got {text!r}")
    return values


def finite_float(text: str) -> float:
    """One finite number (an argparse type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def parse_bool(text: str) -> bool:
    """true/false (also 1/0, yes/no, on/off; any case), an argparse type."""
    lowered = text.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _flag_type(default: Any, static: bool) -> Any:
    if isinstance(default, tuple):
        return _parse_sizes
    if isinstance(default, bool):
        return parse_bool
    if isinstance(default, float):
        return finite_float if static else _parse_floats
    return type(default)


# Where flags are added: a parser, or one of its groups (the help's headings).
Flags = argparse.ArgumentParser | argparse._ArgumentGroup


def add_run_flags(parser: Flags, defaults: Any) -> None:
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
    add(
        "--n_step",
        type=int,
        default=defaults.n_step,
        help="n-step returns: each stored transition sums n rewards (stopping where an "
        "episode ends) and bootstraps with discount^n; 1 is one-step TD",
    )
    add("--save_dir", default=None, help="output folder (default: runs/<run name>)")
    add("--no_progress", action="store_true", help="hide the progress bar")
    add(
        "--checkpoint_every",
        type=int,
        default=DEFAULT_CHECKPOINT_EVERY,
        help="environment steps between full checkpoints (also written at the end and on "
        "SIGINT/SIGTERM); a stopped run loses at most this much work",
    )
    add(
        "--resume",
        metavar="DIR",
        default=None,
        help="continue the run saved in DIR from its newest checkpoint; give the run's "
        "flags again (only --max_timesteps may change)",
    )
    add(
        "--no_checkpoint_replay",
        action="store_true",
        help="leave the replay buffer out of checkpoints (smaller files; a resumed run "
        "then refills the buffer, so its data differ from an uninterrupted run)",
    )
    add_watch_flags(parser)


def add_watch_flags(parser: Flags) -> None:
    """--logger and --video_every: where a run's logs and videos go (not how it learns)."""
    from jax_rl.io.trackers import SINKS, parse_loggers

    parser.add_argument(
        "--logger",
        type=parse_loggers,
        default=("csv",),
        help=f"where the logs go, comma-separated: {', '.join(SINKS)} (csv is always "
        "written; tensorboard and wandb are optional extras, docs/watching.md)",
    )
    parser.add_argument(
        "--video_every",
        type=int,
        default=0,
        metavar="STEPS",
        help="every STEPS environment steps (and at the end), a video of one evaluation "
        "episode per agent in <save_dir>/videos/ (0: none)",
    )


def check_watch_flags(args: argparse.Namespace) -> None:
    """Exit 2 with one line for a tracker that is not installed, a bad --video_every, or
    videos asked for where no renderer can start (all before anything compiles)."""
    from jax_rl.io import video
    from jax_rl.io.trackers import TrackerError, check_installed

    try:
        check_installed(args.logger)
    except TrackerError as e:
        fail(str(e))
    if args.video_every < 0:
        fail(f"--video_every must be a number of steps >= 0, got {args.video_every}")
    if args.video_every:
        try:
            video.check_renderer()
        except video.RendererUnavailable as e:
            fail(f"--video_every: {e}")


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
            n_step=args.n_step,
            **extra,
        )
    except ValueError as e:
        fail(str(e))


def add_population_flag(parser: Flags) -> None:
    """--num_seeds: how many agents train together (crossed with any sweep)."""
    parser.add_argument(
        "--num_seeds",
        type=int,
        default=1,
        help="train this many agents (seeds --seed, --seed+1, ...) together in one vmapped "
        "program; crossed with any swept hyperparameter",
    )


LEARNER_GROUP = "the learner"


def add_policy_flags(parser: argparse.ArgumentParser) -> None:
    """--policy and one flag per learner hyperparameter (default None: the Config's, or a
    preset's); continuous ones take comma-separated values, a sweep. Every learner's flags
    are parsed whatever the policy (another learner's is refused with one line later,
    `build_algo_config`); `focus_help` shows only the chosen learner's."""
    group = parser.add_argument_group(LEARNER_GROUP)
    group.add_argument(
        "--policy", default="TD3", choices=algos.POLICY_CHOICES, help="the learner to train"
    )
    seen: set[str] = set()
    for module in algos.ALGORITHMS.values():
        for field, default, doc, static in common.describe(module.Config):
            if field in seen:
                continue
            seen.add(field)
            sweepable = isinstance(default, float) and not static
            # A switch: `--normalize_obs` alone turns it on, `--normalize_obs false` off.
            switch: dict[str, Any] = (
                {"nargs": "?", "const": True} if isinstance(default, bool) else {}
            )
            action = group.add_argument(
                f"--{field}",
                type=_flag_type(default, static),
                default=None,
                help=doc + ("; comma-separated values sweep it" if sweepable else ""),
                **switch,
            )
            action.learner_doc = action.help  # type: ignore[attr-defined]


def focus_help(parser: argparse.ArgumentParser, argv: Sequence[str]) -> None:
    """Before --help prints: show the learner flags of the --policy on the command line
    only, each with that learner's default; without --policy, none, and how to see them."""
    policy = None
    for i, arg in enumerate(argv):
        if arg == "--policy" and i + 1 < len(argv):
            policy = argv[i + 1]
        elif arg.startswith("--policy="):
            policy = arg.split("=", 1)[1]
    module = algos.ALGORITHMS.get(policy or "")
    defaults = (
        {name: default for name, default, *_ in common.describe(module.Config)} if module else {}
    )
    for group in parser._action_groups:
        if group.title != LEARNER_GROUP:
            continue
        if module is None:
            choices = ", ".join(algos.ALGORITHMS)
            group.description = (
                f"its flags: give --policy too, e.g. --policy SAC --help ({choices})"
            )
        else:
            group.title = (
                f"the learner: {policy} (jax_rl/algos/{module.__name__.split('.')[-1]}.py)"
            )
            group.description = "defaults are the published ones; a --preset may change them"
        for action in group._group_actions:
            if action.dest == "policy":
                continue
            if action.dest not in defaults:
                action.help = argparse.SUPPRESS
                continue
            default, doc = defaults[action.dest], action.learner_doc  # type: ignore[attr-defined]
            text = ",".join(map(str, default)) if isinstance(default, tuple) else default
            action.help = f"{doc} (default: {text})" if text != "" else doc


class HelpFormatter(argparse.HelpFormatter):
    """Each flag's default once: appended where the help does not already say it, and
    never for a flag without one (None or an empty string) or a switch."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if "default" in text or default is None or default in (False, "") or action.nargs == 0:
            return text
        if default == argparse.SUPPRESS:
            return text
        shown = ",".join(map(str, default)) if isinstance(default, tuple | list) else default
        return text + f" (default: {str(shown).replace('%', '%%')})"


def _fields(module: ModuleType) -> set[str]:
    return {name for name, *_ in common.describe(module.Config)}


def build_algo_config(
    args: argparse.Namespace,
    context: str = "",
    origin: Callable[[str], str] | None = None,
) -> tuple[ModuleType, Any, dict[str, list[float]]]:
    """The chosen learner module, its Config and the swept fields (field -> values), or a
    one-line error (after `context`, e.g. the preset that set the values; ending with
    `origin(message)`, e.g. which of the settings it names a preset gave) and exit 2.

    A flag given several comma-separated values is a sweep: the Config holds its
    first value, and every value is checked.
    """
    try:
        module = algos.get(args.policy)
    except algos.UnknownPolicyError as e:
        fail(str(e))
    own = _fields(module)
    values: dict[str, Any] = {}
    sweep: dict[str, list[float]] = {}
    for other in algos.ALGORITHMS.values():
        for field in _fields(other):
            value = getattr(args, field, None)
            if value is None:
                continue
            if field not in own:
                fail(f"{context}--{field} does not apply to --policy {args.policy}")
            if isinstance(value, list):
                if len(value) > 1:
                    sweep[field] = value
                value = value[0]
            values[field] = value
    try:
        config = module.Config(**values)
        for field, swept in sweep.items():
            for value in swept:
                module.Config(**{**values, field: value})
        if hasattr(module, "check_platform"):  # what the learner needs of this process
            module.check_platform(config)
    except ValueError as e:
        fail(f"{context}{e}{origin(str(e)) if origin else ''}")
    return module, config, sweep


def population_of(args: argparse.Namespace, sweep: dict[str, list[float]]) -> list[Any]:
    """The agents of --num_seeds and the sweep (`population.expand`), or exit 2."""
    from jax_rl.core.population import expand
    from jax_rl.loops.common import MAX_SEED

    if args.num_seeds < 1:
        fail(f"--num_seeds must be a positive integer, got {args.num_seeds}")
    if args.seed + args.num_seeds > MAX_SEED:
        fail(f"seeds {args.seed}..{args.seed + args.num_seeds - 1} exceed the seed range")
    try:
        return expand(args.seed, args.num_seeds, sweep)
    except ValueError as e:
        fail(str(e))


def agent_configs(config: Any, agents: Sequence[Any]) -> list[Any]:
    """One Config per agent: `config` with the agent's swept values."""
    return [dataclasses.replace(config, **dict(agent.values)) for agent in agents]
