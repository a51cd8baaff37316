"""The run driver every entry point shares: flags -> settings -> training -> summaries.

An entry point (`main_dm_control.py`, `main_brax.py`, `main_gym.py`) is a
parser of its backend's flags plus a `Backend`: the backend names its task,
turns its flags into loop settings and, once every setting is checked, opens
its environments as a `Trainer`. `main` does the rest, in this order:

1. parse the flags; resolve the settings (learner defaults -> preset -> the
   user's flags, `jax_rl.run.presets`) and check them all (exit 2 on a bad one);
2. print the start-up line at once (compilation follows, which takes a while);
3. open the environments, check the replay fits, check any checkpoint;
4. train (the backend's loop), then write summary.json (and ranking.md for a
   population) and print the final line.

With `--engine ray` steps 3 and 4 happen in Ray tasks instead, one per sub-population
of `--agents_per_worker` agents (`jax_rl.run.subpopulations`, `train_part` here).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, cast

from jax_rl.io import outputs
from jax_rl.run import cli, cluster, presets, resuming
from jax_rl.run.trainers import EVAL_SEED_OFFSET, Outcome


class Trainer(Protocol):
    """A backend's environments, opened for one run."""

    obs_size: int
    action_size: int

    def describe(self, loop_config: Any) -> str:
        """How it trains, for the start-up line ("16 envs x 16 updates ...")."""
        ...

    def config_fields(self) -> dict[str, Any]:
        """Extra fields of config.json (the device, ...)."""
        ...

    def train(
        self,
        algo: ModuleType,
        configs: Sequence[Any],
        seeds: Sequence[int],
        loop_config: Any,
        logger: Any,
        control: Any,
        recorder: Any = None,
    ) -> Outcome:
        """Train the agents; `recorder` (`play.VideoRecorder`, --video_every) records
        videos as the loop reaches its steps."""
        ...


class Backend(Protocol):
    """One environment backend, as its entry point hands it to `main`."""

    kind: str  # "dm_control", "brax", "gymnasium": preset keys and config.json
    run_prefix: str  # prefix of the default run name ("" or "brax-")

    @property
    def loop_config_class(self) -> type:
        """The loop's config dataclass (HostLoopConfig, DeviceLoopConfig)."""
        ...

    def task(self, args: argparse.Namespace) -> str:
        """The task's name in presets and run names ("cartpole-swingup")."""
        ...

    def env_fields(self, args: argparse.Namespace) -> dict[str, Any]:
        """The environment's settings, stored in config.json and checkpoints."""
        ...

    def loop_fields(self, args: argparse.Namespace) -> dict[str, Any]:
        """The backend's own loop settings from its flags."""
        ...

    def check(self, args: argparse.Namespace) -> None:
        """Raise UnknownEnvironmentError (a one-line message listing the valid names) for an
        environment that does not exist or that the learners cannot drive, and
        EnvironmentSettingError for a setting it cannot take (an action repeat longer than
        its episodes)."""
        ...

    def open(self, args: argparse.Namespace, loop_config: Any, seeds: list[int]) -> Trainer:
        """The environments of agents with these seeds (`check` has passed)."""
        ...

    def open_for_watching(
        self, args: argparse.Namespace, loop_config: Any, seed: int, size: tuple[int, int] | None
    ) -> Any:
        """One environment to watch an agent in (`jax_rl.run.play`: render, evaluate, videos
        during training): a `HostEnv` seeded with `seed` that draws frames of `size`
        (width, height) where given, or the device loop's batched environment."""
        ...


def make_parser(description: str) -> argparse.ArgumentParser:
    """The entry points' parser: --help shows each default once, in groups (the
    environment: what the entry point adds before `add_common_flags`; the run; the
    learner of --policy, `cli.focus_help`); a parse error is one line, exit 2."""
    parser = OneLineErrorParser(
        description=description,
        formatter_class=cli.HelpFormatter,
        usage="%(prog)s [--policy {TD3,SAC,MPO}] [flags]  (--policy SAC --help: its flags)",
    )
    parser._optionals.title = "the environment"
    return parser


class OneLineErrorParser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        cli.fail(f"{message} (see --help)")


def add_common_flags(parser: argparse.ArgumentParser, loop_defaults: Any) -> None:
    """--preset, --num_seeds, the run flags (one group) and the learner flags."""
    run = parser.add_argument_group("the run: steps, evaluation, saving, resuming, engine")
    run.add_argument(
        "--preset",
        default=presets.AUTO,
        help="settings over the learner's defaults: auto (the backend's one entry in "
        "jax_rl/presets/<policy>.toml, the same on every task), tuned (the settings chosen "
        "on this task, where there are any), paper (the published defaults only), or a "
        "preset's name; flags you give always win",
    )
    cli.add_population_flag(run)
    cluster.add_engine_flags(run, population=True)
    cli.add_run_flags(run, loop_defaults)
    cli.add_policy_flags(parser)


def explicit_flags(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> set[str]:
    """The destinations of the flags given on the command line (not left at defaults)."""
    saved = [(action, action.default) for action in parser._actions]
    try:
        for action, _ in saved:
            action.default = argparse.SUPPRESS
        given = parser.parse_args(argv)
    finally:
        for action, default in saved:
            action.default = default
    return set(vars(given))


# Flags a preset may not set: they choose what runs (and where), not how it learns.
NOT_IN_PRESETS = frozenset(
    {
        "policy", "preset", "seed", "num_seeds", "save_dir", "resume", "no_progress", "help",
        "logger", "video_every", "engine", "address", "agents_per_worker",
    }
)  # fmt: skip


# A preset's choice that gives way where the user named the same choice another way: its
# critic recipe (crossq, or critic) and the networks it builds. `--critic_network simba`
# on dm_control, whose entry turns crossq on, trains SimBa critics without CrossQ.
GIVES_WAY: dict[str, frozenset[str]] = {
    "crossq": frozenset({"critic", "actor_network", "critic_network", "representation"}),
    "critic": frozenset({"crossq"}),
    "actor_network": frozenset({"crossq"}),
    "critic_network": frozenset({"crossq"}),
    "representation": frozenset({"crossq"}),
}


# A user's setting that names what the preset's choice already builds, and so displaces
# nothing: crossq's networks are the batchrenorm family.
AGREES = frozenset({("actor_network", "batchrenorm"), ("critic_network", "batchrenorm")})


def gave_way(preset: presets.Preset, given: set[str], args: argparse.Namespace) -> list[str]:
    """The preset's settings not applied because the user named the same choice otherwise
    (`GIVES_WAY`); a setting the user gave itself is overridden, not listed here."""
    named = {key for key in given if (key, str(getattr(args, key, None))) not in AGREES}
    return [key for key in preset.settings
            if key not in given and GIVES_WAY.get(key, frozenset()) & named]  # fmt: skip


def apply_preset(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    preset: presets.Preset,
    given: set[str],
) -> dict[str, Any]:
    """Set `preset`'s values on `args` where the user gave no flag; returns those applied.
    A key that is no flag of this entry point, or a value the flag refuses, exits 2."""
    actions = {a.dest: a for a in parser._actions}
    applied: dict[str, Any] = {}
    parsed_values: dict[str, Any] = {}
    where = f"preset {preset.name} ({preset.file})"
    yielded = gave_way(preset, given, args)
    for key, value in preset.settings.items():
        action = actions.get(key)
        if action is None or key in NOT_IN_PRESETS or action.nargs == 0:
            cli.fail(f"{where}: {key!r} is not a setting of this entry point")
        text = ",".join(map(str, value)) if isinstance(value, list) else str(value)
        try:
            parse = cast(Callable[[str], Any], action.type or str)
            parsed = parse(text)
        except (argparse.ArgumentTypeError, ValueError) as e:
            cli.fail(f"{where}: bad value for {key}: {e}")
        if action.choices is not None and parsed not in action.choices:
            cli.fail(f"{where}: {key} must be one of {', '.join(map(str, action.choices))}")
        parsed_values[key] = parsed
        if key not in given and key not in yielded:
            setattr(args, key, parsed)
            applied[key] = value
    # The values on their own, as the learner's Config takes them: a setting of another
    # learner or a value out of range is the preset's fault, and the message says so.
    alone = parser.parse_args(["--policy", args.policy])
    for key, parsed in parsed_values.items():
        setattr(alone, key, parsed)
    cli.build_algo_config(alone, context=f"{where}: ")
    return applied


def preset_origin(preset: presets.Preset, applied: dict[str, Any]) -> Callable[[str], str]:
    """For an error about the settings as a whole: which settings it names the preset gave
    (" (crossq=True: from preset dm_control/* ...)"), so that a user who never asked for
    them learns where they came from; "" if it names none."""

    def origin(message: str) -> str:
        named = [key for key in applied if re.search(rf"\b{re.escape(key)}\b", message)]
        if not named:
            return ""
        given = ", ".join(f"{key}={applied[key]}" for key in named)
        return (
            f" ({given}: from preset {preset.name} ({preset.file}); a flag of yours wins over "
            "it, --preset paper takes no preset)"
        )

    return origin


@dataclasses.dataclass(frozen=True)
class Settings:
    """Every checked setting of a run, before any environment is opened."""

    args: argparse.Namespace
    algo: ModuleType
    algo_config: Any
    sweep: dict[str, list[float]]
    loop_config: Any
    agents: list[Any]
    preset: presets.Preset | None
    preset_applied: dict[str, Any]
    task: str
    user_flags: dict[str, Any]  # the settings given on the command line, as parsed
    preset_gave_way: tuple[str, ...] = ()  # the preset's settings that gave way to the user's

    def preset_record(self) -> dict[str, Any] | None:
        """The preset as config.json records it."""
        if self.preset is None:
            return None
        record = {
            "name": self.preset.name,
            "file": self.preset.file,
            "applied": self.preset_applied,
            "overridden_by_flags": sorted(
                set(self.preset.settings) - set(self.preset_applied) - set(self.preset_gave_way)
            ),
        }
        if self.preset_gave_way:  # to a choice of the user's, named otherwise
            record["gave_way"] = list(self.preset_gave_way)
        if self.preset.instead_of:  # the preset asked for had no entry for this task
            record["instead_of"] = self.preset.instead_of
        if self.preset.name.endswith("/*"):  # the tasks it was chosen on, as it stood
            record["tuned_on"] = list(self.preset.tuned_on)
        return record

    def recorded(self) -> dict[str, Any]:
        """The resolved settings as config.json records them (what `make results` compares)."""
        return {
            "loop": dataclasses.asdict(self.loop_config),
            "algo": dataclasses.asdict(self.algo_config),
        }

    def resolution(self) -> str:
        """The settings' origin, for the start-up line: defaults -> preset -> the user's flags."""
        policy = self.args.policy
        if self.preset is None:
            how = "paper" if self.args.preset == presets.PAPER else "none for this task"
            text = f"{policy} defaults (preset: {how})"
        else:
            applied = ", ".join(f"{k}={v}" for k, v in self.preset_applied.items()) or "nothing"
            text = f"{policy} defaults -> preset {self.preset.name} ({applied})"
            if self.preset.instead_of:
                text += (
                    f" (--preset {self.preset.instead_of} has no entry for {self.task}: "
                    f"the {self.preset.name} recipe, as --preset auto, ran)"
                )
            if self.preset_gave_way:
                text += f" (gave way to your flags: {', '.join(self.preset_gave_way)})"
        if self.user_flags:
            text += f" -> your flags ({', '.join(map(_flag_text, self.user_flags.items()))})"
        return text


def _flag_text(item: tuple[str, Any]) -> str:
    """One setting as it would be typed: `--n_step 2`, `--hidden_sizes 64,64`, `--flag`."""
    key, value = item
    if isinstance(value, bool):  # a switch (or a store_true flag), given
        return f"--{key}" if value else f"--{key} false"
    if isinstance(value, list | tuple):
        value = ",".join(map(str, value))
    return f"--{key} {value}"


def user_settings(
    args: argparse.Namespace, given: set[str], env_fields: dict[str, Any]
) -> dict[str, Any]:
    """The settings the user gave (not what runs or where: policy, seeds, the task, paths);
    a sweepable flag given one value is that value."""
    skip = NOT_IN_PRESETS | set(env_fields)
    values = {key: getattr(args, key) for key in sorted(given - skip)}
    return {k: v[0] if isinstance(v, list) and len(v) == 1 else v for k, v in values.items()}


def resolve_settings(
    parser: argparse.ArgumentParser, backend: Backend, argv: Sequence[str] | None
) -> Settings:
    """Parse and check every setting (exit 2 with one line on the first bad one)."""
    args = parser.parse_args(argv)
    problem = cluster.engine_problem(args)
    if problem:
        cli.fail(problem)
    from jax_rl.envs import EnvironmentSettingError, UnknownEnvironmentError

    try:
        backend.check(args)
    except (UnknownEnvironmentError, EnvironmentSettingError) as e:
        cli.fail(str(e))
    task = backend.task(args)
    try:
        preset = presets.resolve(args.policy, backend.kind, task, args.preset)
    except presets.PresetError as e:
        cli.fail(str(e))
    applied, given = {}, explicit_flags(parser, argv)
    if preset is not None:
        applied = apply_preset(parser, args, preset, given)
    resuming.check_save_dir(args)
    cli.check_watch_flags(args)
    origin = preset_origin(preset, applied) if preset is not None else None
    algo, algo_config, sweep = cli.build_algo_config(args, origin=origin)
    if getattr(algo_config, "exploration_noise_min", 0) > 0 and not getattr(
        backend.loop_config_class, "draws_per_episode", False
    ):
        cli.fail(
            "--exploration_noise_min draws an exploration std per environment and episode, "
            "which the device pipeline (main_brax.py) does; the host loop explores with "
            "--exploration_noise"
        )
    loop_config = cli.build_loop_config(
        backend.loop_config_class, args, **backend.loop_fields(args)
    )
    from jax_rl.loops.common import check_learner

    on_device = backend.loop_config_class.__module__ == "jax_rl.loops.device"
    try:  # what the learner needs of the loop (MR.Q's sub-trajectories), before compiling
        check_learner(algo, algo_config, None if on_device else loop_config.n_step)
    except ValueError as e:
        cli.fail(str(e))
    agents = cli.population_of(args, sweep)
    flags = user_settings(args, given, backend.env_fields(args))
    yielded = tuple(gave_way(preset, given, args)) if preset is not None else ()
    return Settings(
        args, algo, algo_config, sweep, loop_config, agents, preset, applied, task, flags, yielded
    )


@dataclasses.dataclass(frozen=True)
class Finished:
    """What a run ended with: its exit code and its folder (None if it never got one)."""

    code: int
    save_dir: Path | None


def main(argv: Sequence[str] | None, parser: argparse.ArgumentParser, backend: Backend) -> int:
    """Run an entry point (see the module docstring); its exit code."""
    return run(argv, parser, backend).code


def run(argv: Sequence[str] | None, parser: argparse.ArgumentParser, backend: Backend) -> Finished:
    """Parse, check, train and report a run (`main`, and `jax_rl.train` from Python)."""
    from jax_rl.io import quiet, video

    given = sys.argv[1:] if argv is None else list(argv)
    if "-h" in given or "--help" in given:
        cli.focus_help(parser, given)
    if parser.parse_args(argv).video_every:
        # Before MuJoCo and dm_control are imported: they read MUJOCO_GL once.
        video.use_headless_gl()
    quiet.install()
    s = resolve_settings(parser, backend, argv)
    args, agents = s.args, s.agents
    # A task's ":" and "/" (my_pkg.envs:MyEnv-v0, a Gymnasium namespace) would make an
    # awkward folder name or a nested one.
    name = f"{backend.run_prefix}{args.policy}-{re.sub(r'[:/]', '-', s.task)}"
    name += f"-{len(agents)}agents" if len(agents) > 1 else ""
    name += f"-seed{args.seed}"
    if args.engine == "ray":
        from jax_rl.run import subpopulations

        given_argv = sys.argv[1:] if argv is None else argv
        code = subpopulations.train_on_ray(s, backend, given_argv, name, run_part)
        return Finished(code, resuming.save_dir_of(args, name).absolute())
    trainer, save_dir, control = prepare(s, backend, name)
    print(
        f"jax_rl: {outputs.describe_population(agents, s.sweep, name)} on {backend.kind} {s.task}; "
        f"settings: {s.resolution()}. Loading and compiling (a minute or two on a CPU)...",
        file=sys.stderr,
        flush=True,
    )
    if s.preset is not None and s.preset.device == "gpu":
        import jax

        # The preset's accelerator sizes that the user's flags did not replace.
        sizes = ", ".join(
            f"{key} {s.preset_applied[key]}"
            for key in ("num_envs", "batch_size", "critic_hidden_sizes")
            if key in s.preset_applied
        )
        if jax.default_backend() == "cpu" and sizes:
            print(
                f"jax_rl: note: preset {s.preset.name} is sized for a GPU ({sizes}); "
                "on this CPU it runs, slowly",
                file=sys.stderr,
                flush=True,
            )
    return Finished(train(s, backend, trainer, save_dir, control), save_dir)


def prepare(s: Settings, backend: Backend, name: str) -> tuple[Trainer, Path, Any]:
    """Open the environments; check the replay fits and any checkpoint (exit 2 if not)."""
    trainer = open_trainer(s, backend)
    save_dir = resuming.save_dir_of(s.args, name)
    defaults = resuming.identity_defaults(s.loop_config, s.algo_config)
    return (
        trainer,
        save_dir,
        resuming.run_control(s.args, save_dir, identity_of(s, backend), defaults),
    )


def open_trainer(s: Settings, backend: Backend) -> Trainer:
    """The agents' environments, after checking that their replay buffers fit (exit 2)."""
    # Imported late: JAX and the simulators take seconds to load, --help should not.
    from jax_rl.core.replay import ReplaySpec, ReplayTooLargeError, check_fits
    from jax_rl.envs import EnvironmentSettingError

    num_agents = len(s.agents)
    try:
        trainer = backend.open(s.args, s.loop_config, [a.seed for a in s.agents])
    except EnvironmentSettingError as e:
        cli.fail(str(e))
    try:
        # Every agent has a buffer of its own.
        rows = s.loop_config.capacity * num_agents
        check_fits(ReplaySpec(rows, trainer.obs_size, trainer.action_size))
    except ReplayTooLargeError as e:
        cli.fail(f"{num_agents} agents: {e}" if num_agents > 1 else str(e))
    return trainer


def identity_of(s: Settings, backend: Backend) -> dict[str, Any]:
    """The run's identity, as its checkpoints store it (`resuming.run_identity`)."""
    args = s.args
    return resuming.run_identity(
        args,
        s.loop_config,
        s.algo_config,
        **backend.env_fields(args),
        num_seeds=args.num_seeds,
        sweep=s.sweep,
    )


def run_part(
    build_parser: Callable[[], argparse.ArgumentParser],
    backend: Backend,
    argv: Sequence[str],
    indices: Sequence[int],
    top: Path,
    part_dir: Path,
    agent_dirs: list[Path],
    say: Callable[[str], None],
) -> int:
    """A sub-population in a Ray worker (`jax_rl.run.subpopulations`): the run's settings from
    its flags, then `train_part` of the agents `indices`; their folders (under `top`) are
    appended to `agent_dirs` for the caller to read back."""
    s = resolve_settings(build_parser(), backend, list(argv))
    part = dataclasses.replace(s, agents=[s.agents[i] for i in indices])
    folders = [a.folder(s.args.policy) for a in part.agents]
    agent_dirs.extend(top / folder for folder in folders)
    say(f"agents {', '.join(folders)}")
    return train_part(part, backend, part_dir, agent_dirs)


def train_part(s: Settings, backend: Backend, part_dir: Path, agent_dirs: Sequence[Path]) -> int:
    """Train `s.agents`, a sub-population of a bigger run (`jax_rl.run.subpopulations`): its
    checkpoints, config and summary in `part_dir`, each agent's files in `agent_dirs`.
    Where `part_dir` holds a checkpoint (a retried Ray task) it continues from it."""
    from jax_rl.io.checkpoint import Checkpointer

    started = Checkpointer(part_dir / "checkpoints").latest_step() is not None
    resume = str(part_dir) if started else None
    s = dataclasses.replace(s, args=argparse.Namespace(**{**vars(s.args), "resume": resume}))
    trainer = open_trainer(s, backend)
    # The part's own agents in its identity: no part continues another's checkpoint.
    identity = {**identity_of(s, backend), "agents": [a.index for a in s.agents]}
    defaults = resuming.identity_defaults(s.loop_config, s.algo_config)
    control = resuming.run_control(s.args, part_dir, identity, defaults)
    return train(s, backend, trainer, part_dir, control, agent_dirs)


def train(
    s: Settings,
    backend: Backend,
    trainer: Trainer,
    save_dir: Path,
    control: Any,
    agent_dirs: Sequence[Path] | None = None,
) -> int:
    """Write the configs, train, write the summaries; the exit code. The agents' folders
    are `agent_dirs`, by default those of `outputs.agent_dirs`."""
    from jax_rl.io.logger import PopulationLogger
    from jax_rl.io.trackers import TrackerError

    args, agents, loop_config = s.args, s.agents, s.loop_config
    total = loop_config.total_steps
    if agent_dirs is None:
        agent_dirs = outputs.agent_dirs(save_dir, agents, args.policy)
    logger = PopulationLogger.create(
        save_dir,
        agent_dirs,
        total,
        progress=not args.no_progress,
        trackers=args.logger,
        resume=args.resume is not None,
    )
    configs = cli.agent_configs(s.algo_config, agents)
    run_config = {
        "policy": args.policy,
        "env_backend": backend.kind,
        **backend.env_fields(args),
        **trainer.config_fields(),
        "preset": s.preset_record(),
        "flags": s.user_flags,
        **s.recorded(),
    }
    recorder = None
    try:
        outputs.write_configs(logger, run_config, agents, configs, s.sweep, args.policy)
        recorder = video_recorder(s, backend, logger)
        logger.message(f"training {trainer.describe(loop_config)}; writing to {save_dir}")
        seeds = [a.seed for a in agents]
        outcome = resuming.guarded(
            lambda: trainer.train(s.algo, configs, seeds, loop_config, logger, control, recorder)
        )
    except TrackerError as e:
        cli.fail(str(e))
    finally:
        if recorder is not None:
            recorder.close()
        logger.close()
    return _report(
        save_dir, logger, agents, args.policy, f"{backend.kind} {s.task}", total, outcome
    )


def video_recorder(s: Settings, backend: Backend, logger: Any) -> Any:
    """--video_every's recorder (None without it): one player per agent, on an environment
    of its own seeded as the agent's evaluation (so that training draws nothing more)."""
    if not s.args.video_every:
        return None
    from jax_rl.io import video
    from jax_rl.run import play

    players = []
    for agent in s.agents:
        seed = agent.seed + EVAL_SEED_OFFSET
        env = backend.open_for_watching(s.args, s.loop_config, seed, video.DEFAULT_SIZE)
        player = play.make_player(backend.kind, s.algo, env, s.loop_config, seed)
        if isinstance(player, play.DevicePlayer) and env.mj_model() is None:
            cli.fail(f"--video_every: {s.task} has no MuJoCo model to draw")
        players.append(player)
    # Every second frame (under an action repeat of 2, every decision): half the drawing time
    # (a software renderer on a CPU takes tens of ms per frame), still smooth at 30 per second.
    recording = play.Recording(every=2, label=f"{s.args.policy} {s.task}")
    return play.VideoRecorder(players, logger.agents, s.args.video_every, recording)


def _report(
    save_dir: Path,
    logger: Any,
    agents: Sequence[Any],
    policy: str,
    task: str,
    total: int,
    outcome: Outcome,
) -> int:
    """Write the summaries and print the final line(s)."""
    finals = [rows[-1] for rows in outcome.evaluations]
    common = {"env_steps": total, "wall_time": logger.wall_time}
    table = outputs.write_summaries(
        save_dir,
        logger,
        agents,
        policy,
        f"{policy} on {task}: final eval return at {total:,} environment steps",
        finals,
        [{**common, **extra} for extra in outcome.per_agent],
        {"env_steps_per_agent": total, "wall_time": logger.wall_time, **outcome.overall},
    )
    note = f" ({outcome.note})" if outcome.note else ""
    if table is None:
        final = finals[0]
        print(
            f"final eval return {final['return_mean']:.1f} +- {final['return_std']:.1f} "
            f"at {total:,} environment steps{note} ({logger.wall_time:.0f} s); logs in {save_dir}"
        )
        return 0
    print(table, end="")
    print(
        f"{len(agents)} agents, {total:,} environment steps each, in {logger.wall_time:.0f} s"
        f"{note}; logs in {save_dir}, curves: python -m jax_rl.watch.plot {save_dir} "
        f"--out {save_dir / 'curves.png'}"
    )
    return 0
