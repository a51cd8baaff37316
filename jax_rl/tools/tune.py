"""Hyperparameter search on Optuna: each round's trials train as one vmapped population.

    python -m jax_rl.tools.tune docs/examples/tune_cartpole.toml
    python -m jax_rl.tools.tune SPACE.toml --engine ray --address HEAD:6379
    make tune SPACE=docs/examples/tune_cartpole.toml

The search space is a TOML file (`jax_rl.tools.search_space`, checked whole before
anything is written). The study lives in SQLite (`<study_dir>/study.db`, Optuna's RDB
storage). Each round:

1. asks Optuna for `trials_per_round` trials (their parameters are stored before any
   training) and stores the round's plan: its populations (`Part`s), one per distinct
   setting of the static flags, split further with `--engine ray --trials_per_worker`;
2. trains each population in chunks (`Space.chunk_ends`: every `report_every`
   evaluations), each chunk continuing the population's checkpoint with a longer
   `--max_timesteps` (`driver.train_part`, as a Ray worker's sub-population does);
3. after each chunk reports every running trial's new evaluations (the mean over its
   seeds) with `trial.report`, and tells Optuna PRUNED for those its pruner stops; a
   pruned trial keeps training inside its population (one program) until every trial
   of that population is pruned, but nothing more of it is read;
4. after the last chunk tells each remaining trial its final return (COMPLETE; FAIL
   where it diverged).

Killed at any point, the same command continues: a planned round keeps its trials and
continues each population from its newest checkpoint; what was reported stays reported.
The best trial is printed as a preset entry to paste into `jax_rl/presets/<policy>.toml`
(and written to `<study_dir>/best.toml`). docs/tuning.md has the whole story.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import fcntl
import importlib
import json
import math
import re
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from jax_rl.core.population import AgentSpec
from jax_rl.run import cli, cluster
from jax_rl.run.cli import fail
from jax_rl.tools import search_space
from jax_rl.tools.search_space import Param, Space

EXIT_INTERRUPTED = (130, 143)  # a chunk stopped by SIGINT / SIGTERM after its checkpoint
STUDY_DB = "study.db"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    from jax_rl.run.driver import OneLineErrorParser

    parser = OneLineErrorParser(
        prog="python -m jax_rl.tools.tune",
        description="Hyperparameter search on Optuna; each round's trials train as one "
        "vmapped population (docs/tuning.md).",
    )
    parser.add_argument("space", help="the search space, a TOML file (docs/tuning.md)")
    parser.add_argument(
        "--study_dir",
        default=None,
        help="the study's folder: its SQLite storage, the rounds' runs, best.toml "
        "(default: runs/tune/<study name>); the same command continues a stopped search",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="TABLE.KEY=VALUE",
        help="override a key of the space file, e.g. --set study.rounds=8 --set "
        "fixed.hidden_sizes=[64,64] (a TOML value; repeatable)",
    )
    cluster.add_engine_flags(parser, population=False)
    parser.add_argument(
        "--trials_per_worker",
        type=int,
        default=None,
        help="with --engine ray: trials per Ray task (a round's population is split into "
        "sub-populations of this many trials; default: one task per population)",
    )
    return parser.parse_args(argv)


# --- The study ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Part:
    """One population of a round: trials that share every static flag's value."""

    key: str  # "part1": its folder under the round's
    trials: tuple[int, ...]  # trial numbers, in the order of its agents
    static: dict[str, Any]  # the static flags' values (as Optuna stores them)


@dataclasses.dataclass(frozen=True)
class TrialAgent(AgentSpec):
    """An agent of a round's population: one seed of one trial (its folder names both)."""

    trial: int = 0

    @property
    def setting(self) -> str:
        return f"trial {self.trial}"

    def folder(self, policy: str) -> str:
        return f"trial{self.trial:04d}-seed{self.seed}"


def study_folder(space: Space, given: str | None) -> Path:
    """The study's folder (absolute: Ray workers start elsewhere); exit 2 where it cannot be
    one: a file, a folder holding something other than a study, or not writable."""
    import os

    folder = Path(given if given else Path("runs") / "tune" / space.study["name"]).absolute()
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    if not existing.is_dir():
        fail(f"--study_dir {folder}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        fail(f"--study_dir {folder}: cannot write in {existing}")
    if folder.is_dir() and any(folder.iterdir()) and not (folder / STUDY_DB).exists():
        fail(f"--study_dir {folder} holds files but no {STUDY_DB}; choose another folder")
    return folder


@dataclasses.dataclass
class Lock:
    """The study folder held by this process (two searches on one study would mix rounds);
    the kernel releases it when the process ends, even by SIGKILL."""

    folder: Path
    fd: int = -1

    def __enter__(self) -> Lock:
        import os

        self.fd = os.open(self.folder / ".lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fail(f"{self.folder}: another tune is running on this study")
        return self

    def __exit__(self, *exc: object) -> None:
        import os

        os.close(self.fd)


def storage_url(folder: Path) -> str:
    return f"sqlite:///{folder / STUDY_DB}"


def open_study(space: Space, folder: Path, round_number: int) -> Any:
    """The study (created on the first call), with this round's sampler and the pruner.
    A new sampler per round, seeded by the round: a resumed search asks what the
    uninterrupted one would have asked."""
    import optuna

    study_cfg, pruner_cfg = space.study, space.pruner
    seed = study_cfg["seed"] + round_number
    sampler: Any
    if study_cfg["sampler"] == "random":
        sampler = optuna.samplers.RandomSampler(seed=seed)
    else:  # the round's trials are asked together: the liar keeps them apart
        sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=True)
    common = dict(
        n_startup_trials=pruner_cfg["startup_trials"], n_warmup_steps=pruner_cfg["warmup_steps"]
    )
    pruner: Any
    if study_cfg["pruner"] == "median":
        pruner = optuna.pruners.MedianPruner(**common)
    elif study_cfg["pruner"] == "percentile":
        pruner = optuna.pruners.PercentilePruner(pruner_cfg["percentile"], **common)
    else:
        pruner = optuna.pruners.NopPruner()
    return optuna.create_study(
        storage=storage_url(folder),
        study_name=study_cfg["name"],
        direction=study_cfg["direction"],
        sampler=sampler,
        pruner=pruner,
        load_if_exists=True,
    )


def check_same_space(study: Any, space: Space) -> bool:
    """Record the space in a new study; in an existing one, exit 2 if it differs (save for
    `rounds`, which may grow). True where the study already had trials."""
    record = space.record()
    stored = study.user_attrs.get("space")
    if stored is None:
        study.set_user_attr("space", record)
        return False
    if stored != record:
        differs = sorted(k for k in record if record[k] != stored.get(k))
        fail(
            f"the study {space.study['name']} in its folder was made with another search "
            f"space (different: {', '.join(differs)}); only study.rounds may change, or "
            "choose another --study_dir"
        )
    planned = [int(k[5:]) for k in study.user_attrs if re.fullmatch(r"round\d+", k)]
    if max(planned, default=0) > space.study["rounds"]:
        fail(f"the study has planned {max(planned)} rounds already; study.rounds can only grow")
    return bool(study.trials)


def suggest(trial: Any, param: Param) -> Any:
    """The trial's value of `param` (the stored one where it has it already)."""
    dist = param.distribution()
    from optuna import distributions

    if isinstance(dist, distributions.CategoricalDistribution):
        return trial.suggest_categorical(param.name, dist.choices)
    if isinstance(dist, distributions.IntDistribution):
        return trial.suggest_int(param.name, dist.low, dist.high, step=dist.step, log=dist.log)
    return trial.suggest_float(param.name, dist.low, dist.high, step=dist.step, log=dist.log)


def round_trials(study: Any, space: Space, number: int) -> list[Any]:
    """The round's trials, asked of Optuna where fewer than `trials_per_round` exist. A
    trial is the round's once its parameters are all stored (its `round` attribute is set
    last); one asked but not yet marked (killed in between) is taken up, not left."""
    import optuna
    from optuna.trial import TrialState

    def members() -> list[Any]:
        return [t for t in study.get_trials() if t.user_attrs.get("round") == number]

    have = members()
    orphans = [
        t for t in study.get_trials(states=(TrialState.RUNNING,)) if "round" not in t.user_attrs
    ]
    for _ in range(space.study["trials_per_round"] - len(have)):
        trial = optuna.Trial(study, orphans.pop(0)._trial_id) if orphans else study.ask()
        for param in space.params:
            suggest(trial, param)
        trial.set_user_attr("round", number)
    return sorted(members(), key=lambda t: t.number)


def plan_round(study: Any, space: Space, number: int, per_worker: int | None) -> list[Part]:
    """The round's populations, stored with the study once its trials exist: trials with
    the same static values together (in trial order), `per_worker` trials at most."""
    key = f"round{number}"
    stored = study.user_attrs.get(key)
    if stored is None:
        trials = round_trials(study, space, number)
        groups: dict[str, list[Any]] = {}
        for trial in trials:
            static = {p.name: trial.params[p.name] for p in space.static}
            groups.setdefault(json.dumps(static, sort_keys=True), []).append(trial)
        stored = []
        for members in groups.values():
            size = per_worker or len(members)
            for i in range(0, len(members), size):
                chunk = members[i : i + size]
                static = {p.name: chunk[0].params[p.name] for p in space.static}
                stored.append(
                    {"key": f"part{len(stored) + 1}", "trials": [t.number for t in chunk],
                     "static": static}
                )  # fmt: skip
        study.set_user_attr(key, stored)
    return [Part(p["key"], tuple(p["trials"]), p["static"]) for p in stored]


# --- Training a round --------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Chunk:
    """One population trained (continued) to step `end`: what a worker needs."""

    key: str
    label: str
    entry: tuple[str, str]  # the entry point's module and Backend class
    argv: tuple[str, ...]
    agents: tuple[TrialAgent, ...]
    part_dir: Path
    log: Path
    end: int


def train_chunk(chunk: Chunk) -> int:
    """Train the chunk's population to its end, continuing the newest checkpoint in its
    folder (`driver.train_part`); the run's exit code."""
    from jax_rl.run import driver

    module = importlib.import_module(chunk.entry[0])
    backend = getattr(module, chunk.entry[1])()
    s = driver.resolve_settings(module.build_parser(), backend, list(chunk.argv))
    names = [name for name, _ in chunk.agents[0].values]
    sweep = {name: [dict(a.values)[name] for a in chunk.agents] for name in names}
    s = dataclasses.replace(s, agents=list(chunk.agents), sweep=sweep)
    dirs = [chunk.part_dir / a.folder(s.args.policy) for a in chunk.agents]
    return driver.train_part(s, backend, chunk.part_dir, dirs)


def use_cache(folder: Path) -> None:
    """JAX's persistent compilation cache in the study folder: every chunk after a
    population's first, and every round of the same shapes, loads its programs."""
    from jax_rl.tools.gpu_check import use_compilation_cache

    use_compilation_cache(folder)


class LocalEngine:
    """Chunks one after another in this process, each one's output in its log."""

    def __init__(self, cache: Path) -> None:
        self.cache: Path | None = cache

    def train(self, chunks: Sequence[Chunk], events: Path) -> dict[str, int]:
        if self.cache is not None:
            use_cache(self.cache)
            self.cache = None
        codes = {}
        for chunk in chunks:
            with cluster.output_to(chunk.log):
                codes[chunk.key] = cluster.exit_code(lambda: train_chunk(chunk))
        return codes


class RayEngine:
    """Chunks as Ray tasks, all of a wave at once (`jax_rl.run.cluster`)."""

    def __init__(self, address: str | None, cache: Path, device_pipeline: bool) -> None:
        cluster.connect(address)
        self.cache = cache
        self.gpus = cluster.gpus_per_job(device_pipeline)

    def train(self, chunks: Sequence[Chunk], events: Path) -> dict[str, int]:
        codes: dict[str, int] = {}

        def finish(job: cluster.Job, code: int) -> bool:
            codes[job.key] = code
            return code == 0

        submissions = [
            cluster.Submission(
                cluster.Job(
                    key=c.key,
                    label=c.label,
                    watch=c.part_dir,
                    log=c.log,
                    total_steps=c.end,
                    gpus=self.gpus,
                ),
                train_chunk_in_worker,
                (c, self.cache),
            )  # fmt: skip
            for c in chunks
        ]
        for job in cluster.run_jobs(submissions, finish, events):
            codes.setdefault(job.key, 1)  # its worker lost RETRIES times
        return codes


def train_chunk_in_worker(job: cluster.Job, board: Any, chunk: Chunk, cache: Path) -> int:
    """A chunk as a Ray task: `train_chunk` in this worker process (a lost worker is
    retried by Ray and continues from the population's checkpoint)."""

    def work(say: Callable[[str], None]) -> int:
        from jax_rl.io import quiet

        quiet.install()
        use_cache(cache)
        return cluster.exit_code(lambda: train_chunk(chunk))

    return cluster.run_job(job, board, work)


class Stop(Exception):
    """The search stops here with this exit code (the message says why and what next)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclasses.dataclass
class Round:
    """One round's populations and how each is trained (their flags, agents, chunk ends)."""

    number: int
    parts: list[Part]
    space: Space
    folder: Path  # the study's
    argv: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    ends: dict[str, list[int]] = dataclasses.field(default_factory=dict)
    agents: dict[str, tuple[TrialAgent, ...]] = dataclasses.field(default_factory=dict)

    @property
    def dir(self) -> Path:
        return self.folder / f"round{self.number:03d}"

    def prepare(self, study: Any) -> None:
        """Each population's flags and agents; a population whose static values a run
        refuses (a combination the bounds' checks could not see) fails its trials."""
        from optuna.trial import TrialState

        study_cfg = self.space.study
        for part in self.parts:
            values = {**run_flags(self.space), **{
                p.name: p.value(part.static[p.name]) for p in self.space.static}}  # fmt: skip
            try:
                settings, _ = search_space.resolve(self.space, values)
            except cli.UsageError as e:
                for number in part.trials:
                    if trial_state(study, number) == TrialState.RUNNING:
                        mark(study, number, "error", e.message)
                        study.tell(number, state=TrialState.FAIL)
                continue
            self.argv[part.key] = self.space.argv(values)
            self.ends[part.key] = self.space.chunk_ends(settings.loop_config.start_timesteps)
            seeds = range(study_cfg["seed"], study_cfg["seed"] + study_cfg["seeds"])
            agents: list[TrialAgent] = []
            for number in part.trials:
                params = trial_params(study, number)
                traced = tuple(sorted((p.name, float(params[p.name])) for p in self.space.traced))
                agents += [TrialAgent(len(agents), seed, traced, number) for seed in seeds]
            self.agents[part.key] = tuple(agents)

    def chunk(self, part: Part, end: int) -> Chunk:
        argv = [*self.argv[part.key], "--max_timesteps", str(end)]
        trials = ", ".join(map(str, part.trials))
        return Chunk(
            key=f"round{self.number}-{part.key}",
            label=f"round {self.number} {part.key} (trials {trials}) to {end:,} steps",
            entry=self.space.entry,
            argv=tuple(argv),
            agents=self.agents[part.key],
            part_dir=self.dir / part.key,
            log=self.dir / f"{part.key}.log",
            end=end,
        )


def run_flags(space: Space) -> dict[str, Any]:
    """The flags the tuner adds to every population's: no progress bar; the replay as big
    as the whole trial's (a chunk's shorter --max_timesteps would shrink its default, and a
    checkpoint continues only a run of the same capacity); a checkpoint every evaluation."""
    from jax_rl.loops.common import replay_capacity

    flags: dict[str, Any] = {"no_progress": True}
    if "replay_size" not in space.fixed and all(p.name != "replay_size" for p in space.params):
        flags["replay_size"] = replay_capacity(space.study["max_timesteps"], None)
    if "checkpoint_every" not in space.fixed:
        flags["checkpoint_every"] = space.study["eval_freq"]
    return flags


def mark(study: Any, number: int, key: str, value: Any) -> None:
    """Set a user attribute of running trial `number` (why it failed, where it was pruned)."""
    import optuna

    trial_id = study.get_trials(deepcopy=False)[number]._trial_id
    optuna.Trial(study, trial_id).set_user_attr(key, value)


def trial_state(study: Any, number: int) -> Any:
    return study.get_trials(deepcopy=False)[number].state


def trial_params(study: Any, number: int) -> dict[str, Any]:
    return study.get_trials(deepcopy=False)[number].params


def latest_checkpoint(part_dir: Path) -> int:
    """The step of the population's newest checkpoint (0 before its first)."""
    from jax_rl.io.checkpoint import Checkpointer

    checkpointer = Checkpointer(part_dir / "checkpoints")
    try:
        return checkpointer.latest_step() or 0
    finally:
        checkpointer.close()


def curve(rnd: Round, part: Part, number: int) -> dict[int, float]:
    """Trial `number`'s evaluation returns by step: the mean over its seeds, at the steps
    every seed has reached (read from the CSVs, so a resumed search reads what it read)."""
    by_seed = []
    for agent in rnd.agents[part.key]:
        if agent.trial != number:
            continue
        path = rnd.dir / part.key / agent.folder("") / "evaluations.csv"
        rows: dict[int, float] = {}
        if path.exists():
            with path.open(newline="") as f:
                rows = {int(r["step"]): float(r["return_mean"]) for r in csv.DictReader(f)}
        by_seed.append(rows)
    steps = set.intersection(*(set(rows) for rows in by_seed)) if by_seed else set()
    return {step: sum(rows[step] for rows in by_seed) / len(by_seed) for step in sorted(steps)}


def tell_chunk(study: Any, rnd: Round, part: Part, end: int, last: bool) -> list[str]:
    """Report each running trial's new evaluations; then tell the pruned PRUNED, and
    after the last chunk the others COMPLETE (FAIL where a return is not finite). Returns
    one phrase per trial for the progress line."""
    import optuna
    from optuna.trial import TrialState

    words = []
    for number in part.trials:
        frozen = study.get_trials(deepcopy=False)[number]
        if frozen.state != TrialState.RUNNING:
            words.append(f"trial {number} {frozen.state.name.lower()}")
            continue
        values = curve(rnd, part, number)
        trial = optuna.Trial(study, frozen._trial_id)
        bad = [step for step, value in values.items() if step > 0 and not math.isfinite(value)]
        if not values:  # its population ended without writing an evaluation
            trial.set_user_attr("error", f"no evaluations in {rnd.dir / part.key}")
            study.tell(number, state=TrialState.FAIL)
            words.append(f"trial {number} failed (no evaluations)")
            continue
        if bad:
            trial.set_user_attr("diverged_at", bad[0])
            study.tell(number, state=TrialState.FAIL)
            words.append(f"trial {number} diverged at {bad[0]:,} steps (failed)")
            continue
        for step, value in values.items():
            if step > 0 and step not in frozen.intermediate_values:
                trial.report(value, step)
        current = values[max(values)]
        if last:
            study.tell(number, current)
            words.append(f"trial {number} {current:.1f}")
        elif trial.should_prune():
            trial.set_user_attr("pruned_at", max(values))
            study.tell(number, state=TrialState.PRUNED)
            words.append(f"trial {number} {current:.1f} (pruned)")
        else:
            words.append(f"trial {number} {current:.1f}")
    return words


def run_round(study: Any, rnd: Round, engine: Any) -> None:
    """Train the round's populations chunk by chunk, telling Optuna between chunks."""
    from optuna.trial import TrialState

    def running(part: Part) -> bool:
        return any(trial_state(study, n) == TrialState.RUNNING for n in part.trials)

    total = rnd.space.study["max_timesteps"]
    for end in sorted({end for ends in rnd.ends.values() for end in ends}):
        live = [p for p in rnd.parts if p.key in rnd.ends and end in rnd.ends[p.key]]
        live = [p for p in live if running(p)]
        if not live:
            continue
        due = [rnd.chunk(p, end) for p in live if latest_checkpoint(rnd.dir / p.key) < end]
        codes = engine.train(due, rnd.folder / "ray-events.jsonl") if due else {}
        words = []
        for part in live:
            code = codes.get(rnd.chunk(part, end).key, 0)
            log = rnd.dir / f"{part.key}.log"
            if code in EXIT_INTERRUPTED:
                raise Stop(code, f"stopped (round {rnd.number}, {part.key}: exit {code})")
            if code == cli.EXIT_NON_FINITE:  # every agent of the population diverged
                for number in part.trials:
                    if trial_state(study, number) == TrialState.RUNNING:
                        mark(study, number, "error", f"diverged; see {log}")
                        study.tell(number, state=TrialState.FAIL)
                words.append(f"{part.key} diverged (its trials failed)")
                continue
            if code != 0:
                raise Stop(code, f"round {rnd.number}, {part.key}: exit code {code}; see {log}")
            words += tell_chunk(study, rnd, part, end, last=end == rnd.ends[part.key][-1])
        say(f"round {rnd.number}/{rnd.space.study['rounds']} at {end:,} / {total:,} steps: "
            f"{', '.join(words)}")  # fmt: skip


def say(text: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)


def describe_trial(study: Any, space: Space, number: int) -> str:
    params = trial_params(study, number)
    return ", ".join(f"{p.name}={_short(params[p.name])}" for p in space.params)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _short(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


# --- The best trial as a preset ----------------------------------------------------------


def toml_value(value: Any) -> str:
    """A flag's value as TOML writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(str(value))


def preset_entry(study: Any, space: Space, folder: Path) -> str:
    """The best trial as a named preset of jax_rl/presets/<policy>.toml: the study's
    preset, its fixed flags (not the measurement's) and the trial's values."""
    from optuna.trial import TrialState

    best = study.best_trial
    trials = study.get_trials(deepcopy=False)
    count = {s: sum(t.state == s for t in trials) for s in TrialState}
    cfg = space.study
    settings = {**space.preset_applied, **space.fixed}
    settings = {k: v for k, v in settings.items() if k not in search_space.MEASUREMENT}
    settings |= {p.name: p.value(best.params[p.name]) for p in space.params}
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", cfg["name"]).strip("-") or "study"
    where = _relative(folder)
    seeds = cfg["seeds"]
    evidence = (
        f"{where} (python -m jax_rl.tools.tune {_relative(space.path)}: Optuna study "
        f"{cfg['name']}, trial {best.number}, the best of {count[TrialState.COMPLETE]} "
        f"complete trials ({count[TrialState.PRUNED]} pruned, {count[TrialState.FAIL]} "
        f"failed) in rounds of {cfg['trials_per_round']}: final return {best.value:.1f} at "
        f"{cfg['max_timesteps']:,} steps, {'the mean of ' if seeds > 1 else ''}{seeds} "
        f"seed{'s' if seeds > 1 else ''} from seed {cfg['seed']}; tuned on {space.task} "
        "and these seeds: not a held-out result)"
    )
    preset = f" over preset {space.preset_name}" if space.preset_name else ""
    lines = [
        f"# {cfg['policy']} on {space.task}, tuned by Optuna{preset}: the study's fixed flags "
        f"and its best trial's values; --preset tuned-{slug} takes it on this task.",
        f'[named."tuned-{slug}/{space.task}"]',
        f"evidence = {json.dumps(evidence)}",
        *(f"{k} = {toml_value(v)}" for k, v in settings.items()),
    ]
    return "\n".join(lines) + "\n"


def _relative(path: Path) -> str:
    try:
        return str(path.absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def report_best(study: Any, space: Space, folder: Path) -> int:
    """Print the best trial and its preset entry (also written to best.toml)."""
    from optuna.trial import TrialState

    if not study.get_trials(states=(TrialState.COMPLETE,)):
        print("no trial completed: nothing to report", file=sys.stderr)
        return 1
    best = study.best_trial
    entry = preset_entry(study, space, folder)
    (folder / "best.toml").write_text(entry)
    policy = space.study["policy"].lower()
    print(
        f"best: trial {best.number} (round {best.user_attrs.get('round')}), final return "
        f"{best.value:.1f} at {space.study['max_timesteps']:,} steps: "
        f"{describe_trial(study, space, best.number)}\n"
        f"paste into jax_rl/presets/{policy}.toml (also in {_relative(folder / 'best.toml')}):\n"
    )
    print(entry, end="")
    return 0


# --- The command -------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return search(args)
    except cli.UsageError as e:
        return e.code if isinstance(e.code, int) else 2
    except Stop as e:
        print(f"error: {e}; run the same command to continue the study", file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        print("stopped; run the same command to continue the study", file=sys.stderr)
        return 130


def search(args: argparse.Namespace) -> int:
    """Check everything, then run (or continue) the study; the exit code."""
    problem = cluster.engine_problem(args)
    if problem:
        fail(problem)
    if args.trials_per_worker is not None and args.engine != "ray":
        fail("--trials_per_worker needs --engine ray")
    if args.trials_per_worker is not None and args.trials_per_worker < 1:
        fail(f"--trials_per_worker must be a positive integer, got {args.trials_per_worker}")
    try:
        import optuna
    except ImportError:
        fail('the tuner needs Optuna: pip install -e ".[tune]" (make init installs it)')
    from jax_rl.io import quiet

    quiet.install()
    space = search_space.load(Path(args.space), args.set)
    folder = study_folder(space, args.study_dir)
    engine = make_engine(args, space, folder)  # joins Ray (exit 2 where it cannot)
    # Everything is checked: from here on the study's folder is written.
    folder.mkdir(parents=True, exist_ok=True)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    with Lock(folder):
        study = open_study(space, folder, 1)
        resumed = check_same_space(study, space)
        announce(study, space, folder, resumed)
        for number in range(1, space.study["rounds"] + 1):
            study = open_study(space, folder, number)
            train_round(study, space, folder, number, args.trials_per_worker, engine)
        return report_best(study, space, folder)


def make_engine(args: argparse.Namespace, space: Space, folder: Path) -> Any:
    """Where the chunks train: this process, or Ray tasks (joined here, exit 2 if not)."""
    cache = folder / "jax_cache"
    if args.engine != "ray":
        return LocalEngine(cache)
    from jax_rl.loops.device import DeviceLoopConfig

    settings, _ = search_space.resolve(space, {})
    device = isinstance(settings.loop_config, DeviceLoopConfig)
    return RayEngine(args.address, cache, device)


def announce(study: Any, space: Space, folder: Path, resumed: bool) -> None:
    """The start-up line: the study, its size, and which searched flags are which."""
    cfg = space.study
    traced = ", ".join(p.name for p in space.traced)
    static = ", ".join(p.name for p in space.static)
    searched = f"{traced} (in one population)" if traced else ""
    if static:
        searched += f"{'; ' if traced else ''}{static} (static: a population per value)"
    what = "continuing" if resumed else "starting"
    print(
        f"jax_rl tune: {what} study {cfg['name']} in {_relative(folder)} (SQLite: {STUDY_DB}): "
        f"{_count(cfg['rounds'], 'round')} x {_count(cfg['trials_per_round'], 'trial')} of "
        f"{cfg['policy']} on {space.task}, {cfg['max_timesteps']:,} steps each; "
        f"searching {searched}",
        file=sys.stderr,
        flush=True,
    )


def train_round(
    study: Any, space: Space, folder: Path, number: int, per_worker: int | None, engine: Any
) -> None:
    """Plan round `number` (or read its plan) and train what it has left."""
    from optuna.trial import TrialState

    parts = plan_round(study, space, number, per_worker)
    numbers = [n for part in parts for n in part.trials]
    states = [trial_state(study, n) for n in numbers]
    if all(s.is_finished() for s in states):
        return
    rounds = space.study["rounds"]
    started = (
        any(s != TrialState.RUNNING for s in states) or (folder / f"round{number:03d}").is_dir()
    )
    say(f"round {number}/{rounds}{' (continued)' if started else ''}: "
        f"{_count(len(parts), 'population')}")  # fmt: skip
    for part in parts:
        for n in part.trials:
            say(f"  trial {n} ({part.key}): {describe_trial(study, space, n)}")
    rnd = Round(number, parts, space, folder)
    rnd.prepare(study)
    start = time.perf_counter()
    run_round(study, rnd, engine)
    say(f"round {number}/{rounds} done in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
