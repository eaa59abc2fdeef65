"""The ``cpsched`` command: a thin shell over the front door (:mod:`cpsched.api`).

Results go to stdout or ``-o``; progress, summaries and errors go to stderr.
Exit codes: 0 proven (optimal, or infeasible with the file saying so; a valid
schedule for ``validate``), 1 invalid schedule (``validate``) or a failed
benchmark, 2 bad input or usage (nothing solved, nothing written), 3 a result
written but not proven (feasible / unknown, time limit, Ctrl-C), 70 internal
error, 130 interrupted before any result.

Only typer and rich are imported at start-up; each command imports what it
needs, so ``cpsched --help`` and ``cpsched solve x.json`` import no onnx,
onnxruntime, pandas, dask or matplotlib.
"""

from __future__ import annotations

import functools
import json
import sys
import warnings
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.console import Console

from cpsched.errors import InputError, NoSchedule, ParameterError

if TYPE_CHECKING:
    from cpsched.instance import Instance
    from cpsched.schedule import Front, Schedule

EXIT_OK, EXIT_INVALID, EXIT_INPUT, EXIT_UNPROVEN, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 70, 130

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Exact scheduling of DNN computation graphs onto heterogeneous devices.")
err = Console(stderr=True, highlight=False)

InputArg = Annotated[Path, typer.Argument(
    help="instance JSON (cpsched-instance/1), STG graph (.stg), task graph with communication costs (Sinnen "
         ".dot, Santiago .txt/.dag, HEFT *_task_exe_time.csv), ONNX model (.onnx) or a bundled model name")]
Processors = Annotated[Optional[int], typer.Option("--processors", "-m",
                                                   help="identical processors for an STG or DOT graph")]
Contention = Annotated[bool, typer.Option("--contention", help="for task graphs with communication costs: "
                                          "exclusive links (the published values assume none)")]
PlatformOpt = Annotated[Optional[str], typer.Option(
    "--platform", "-p", help="for ONNX input: a preset (edge, server, multigpu, cpu2) or a platform YAML file")]
Dims = Annotated[Optional[list[str]], typer.Option("--dim", help="for ONNX input: pin a symbolic dim, NAME=VALUE")]
Fuse = Annotated[str, typer.Option("--fuse", help="for ONNX input: operator fusion, none|elementwise|standard")]
Costs = Annotated[Optional[list[str]], typer.Option(
    "--costs", help="for ONNX input: measured node times (cpsched profile), [DEVICE=]FILE; without DEVICE "
                    "for every device that runs as they were measured")]
Precisions = Annotated[Optional[list[str]], typer.Option(
    "--precisions", help="for ONNX input: int8 times and errors (cpsched quantize), [DEVICE=]FILE; without DEVICE "
                         "for the device the file names; becomes fp32/int8 modes where the platform lists int8")]
Output = Annotated[Optional[Path], typer.Option("--output", "-o", help="write here instead of stdout")]

#: library parameters whose flag is not ``--`` + the name with dashes (None: no flag, say it as is)
FLAGS = {"dims": "--dim", "source": "INPUT", "name": "NAME", "limits": None}


@app.callback()
def _setup() -> None:
    """Warnings become one ``warning:`` line on stderr."""
    warnings.showwarning = lambda message, *_: err.print(f"warning: {message}", markup=False, soft_wrap=True)


class MemoryPlan(str, Enum):
    after = "after"
    joint = "joint"


def message(exc: InputError) -> str:
    """The one-line error as the command says it: flags, not parameter names."""
    if isinstance(exc, ParameterError):
        flag = FLAGS.get(exc.param, "--" + exc.param.replace("_", "-"))
        return str(exc) if flag is None else exc.as_option(flag)
    return str(exc)


def guarded(command):
    """Turn library errors into one line on stderr and the documented exit codes."""
    @functools.wraps(command)
    def run(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except typer.Exit:
            raise
        except InputError as exc:
            err.print(f"error: {message(exc)}", markup=False, soft_wrap=True)
            raise typer.Exit(EXIT_INPUT) from None
        except KeyboardInterrupt:
            err.print("interrupted before any result", markup=False, soft_wrap=True)
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except Exception as exc:  # noqa: BLE001 - the documented last resort
            from cpsched import interrupt

            if interrupt.requested():  # Ctrl-C broke something (an extension module's import, say)
                err.print("interrupted before any result", markup=False, soft_wrap=True)
                raise typer.Exit(EXIT_INTERRUPTED) from None
            err.print(f"internal error: {type(exc).__name__}: {exc}".splitlines()[0], markup=False, soft_wrap=True)
            raise typer.Exit(EXIT_INTERNAL) from None
    return run


def say(text: str) -> None:
    err.print(text, markup=False, soft_wrap=True)


def emit(data: dict, output: Path | None) -> None:
    """Write a result atomically to ``output``, or print it on stdout."""
    from cpsched.files import write_json

    if output is None:
        sys.stdout.write(json.dumps(data, indent=1) + "\n")
    else:
        write_json(output, data)


def targets(*paths: Path | None) -> None:
    """Refuse, before any work, output paths that cannot be written."""
    from cpsched.files import check_target

    for path in paths:
        if path is not None:
            check_target(path)


def names(text: str) -> list[str]:
    """``latency,energy`` -> ``["latency", "energy"]`` (checked by the library)."""
    return [n.strip() for n in text.split(",") if n.strip()]


def human(value: int | None, name: str, units) -> str:
    from cpsched.quantities import KIND, human as show

    if value is None:
        return "-"
    return show(value, KIND.get(name, ""), units.get(KIND.get(name, ""), units.get(name, "")))


@contextmanager
def live(label: str, units):
    """A status line on stderr while solving: elapsed time, incumbent and bound (rich)."""
    from cpsched.engines.protocol import Progress

    sweep = {"so far": ""}  # a sweep's points and certified gap so far, from its last line
    with err.status(label) as status:
        def report(event) -> None:
            if isinstance(event, Progress):
                status.update(f"{label}  {event.elapsed:.1f} s  {event.objective}: incumbent "
                              f"{human(event.value, event.objective, units)}, bound "
                              f"{human(event.bound, event.objective, units)}{sweep['so far']}")
            else:
                say(event)
                sweep["so far"] = "  (" + event.rsplit(" — ", 1)[-1] + ")" if " — " in event else ""
        yield report


def load(input: Path, processors, platform, dim, fuse, contention=False, costs=None, precisions=None) -> "Instance":
    from cpsched import api
    from cpsched.inputs import parse_dims

    return api.load(input, platform=platform, dims=parse_dims(dim) or None, fuse=fuse, processors=processors,
                    contention=contention, costs=costs, precisions=precisions)


def parse_decompose(text: str) -> str | int:
    """``auto`` / ``off`` / a window size (an integer >= 1) for ``--decompose``."""
    if text in ("auto", "off"):
        return text
    if text.isdigit() and int(text) >= 1:
        return int(text)
    raise ParameterError("decompose", text, "expected auto, off or a window size (an integer >= 1)")


def summary(instance: "Instance", schedule: "Schedule", minimised: list[str]) -> None:
    """Status, each objective (readable and exact) with its bound and gap, and the time, on stderr."""
    from rich.table import Table

    from cpsched.schedule import ALL_OBJECTIVES, UNIT_KIND

    wall = schedule.solver.get("wall_time")
    warm = schedule.solver.get("warm_start", {}).get("wall_time", 0.0)
    took = f" in {wall + warm:.2f} s" if wall is not None else ""
    cached = " (cached answer; --no-cache solves again)" if schedule.solver.get("cached") else ""
    err.print(f"[bold]{instance.name or 'instance'}[/]: {len(instance.tasks)} tasks, "
              f"{len(instance.devices)} devices — status [bold]{schedule.status}[/]{took}{cached}")
    if schedule.reason:
        say(f"reason: {schedule.reason}")
    if not schedule.status.has_schedule:
        return
    table = Table(show_edge=False, header_style="bold")
    for col in ("objective", "value", "exact", "bound", "gap"):
        table.add_column(col, justify="left" if col == "objective" else "right")
    for name in (n for n in ALL_OBJECTIVES if n in schedule.objectives):
        value, bound = schedule.objectives[name], schedule.bounds.get(name)
        gap = "" if bound is None else f"{(value - bound) / value:.1%}" if value else "0.0%"
        unit = instance.units.get(UNIT_KIND[name], "")
        table.add_row(label(name) + (" *" if name in minimised else ""), human(value, name, instance.units),
                      f"{value:,} {unit}".rstrip(), "" if bound is None else f"{bound:,}", gap)
    err.print(table)
    source = schedule.solver.get("bound_source")
    if source and minimised and schedule.status.has_schedule:
        series = schedule.solver.get("decompose", {}).get("series", {})
        say(f"{minimised[0]} {'proven by' if schedule.status.proven else 'bound from'}: " + {
            "search": "the engine's search",
            "relaxation": "the relaxation (the weights spread over the devices, or the largest task's bytes)"
                          if minimised[0] in ("memory", "arena") else
                          "the relaxation (critical path with transfers, work and unavoidable idle time "
                          "spread over the devices, summed over the segments between cut tasks)",
            "series": f"the series decomposition ({series.get('segments', '?')} segments between cut tasks)",
            "priced": f"the series decomposition ({series.get('segments', '?')} segments between cut tasks) "
                      "with the weights on full devices priced",
            "residency": "the residency relaxation (each device's weights and its running task's bytes, "
                         "time dropped)",
            "forkjoin": "the fork-join assignment model (no schedule one shorter exists)",
        }.get(source, source))
    used: dict[str, int] = {}
    for p in schedule.tasks.values():
        used[p.device] = used.get(p.device, 0) + 1
    say("placement: " + ", ".join(f"{d} {n}" for d, n in used.items())
        + f"; {len(schedule.transfers)} transfers   (* minimised)")


def label(objective: str) -> str:
    """An objective's name as tables print it: ``error`` says it is a proxy (PROBLEM.md section 6)."""
    return "error (additive proxy)" if objective == "error" else objective


def front_summary(instance: "Instance", front: "Front") -> None:
    from rich.table import Table

    table = Table(show_edge=False, header_style="bold")
    table.add_column("#", justify="right")
    for name in front.objectives:
        table.add_column(label(name), justify="right")
    table.add_column("status")
    for i, p in enumerate(front.points, 1):
        table.add_row(str(i), *(human(v, n, instance.units) for v, n in zip(p.values, front.objectives)),
                      str(p.status))
    err.print(table)
    if front.complete:
        state = "[bold]complete[/] (proven)"
    elif "solves" in front.meta:
        certified = f", certified within {front.gap:.1%}" if front.gap is not None else ", nothing certified"
        state = f"[bold]not complete[/]{certified} ({front.meta.get('stopped', 'unproven points')}; " \
                "--resume continues)"
    else:
        state = f"[bold]not complete[/] (heuristic {front.meta.get('method', '')}: nothing is proven)"
    work = f"{front.meta['solves']} solves" if "solves" in front.meta else \
        f"{front.meta.get('evaluations', 0)} evaluations"
    joined = front.meta.get("joined")
    if joined:
        work += f" of the whole graph after {joined['pairs']} segment fronts ({joined['complete']} complete)"
    cached = " (cached front; --no-cache sweeps again)" if front.meta.get("cached") else ""
    err.print(f"{instance.name}: {len(front.points)} points, {state}, {work} in "
              f"{front.meta.get('wall_time', 0):.2f} s{cached}")
    check = front.meta.get("verify")
    if check:
        word = "every gap re-proven empty" if check["certified"] else f"not finished ({check.get('stopped', '')})"
        err.print(f"verification: {word}, {check['solves']} solves in {check['wall_time']:.2f} s")


@app.command()
@guarded
def solve(
    input: InputArg,
    objective: Annotated[str, typer.Option(help="objective, or a lexicographic list such as latency,energy")]
    = "latency",
    epsilon: Annotated[Optional[str], typer.Option(
        help="compute the exact Pareto front, bounding and stepping this objective (auto: a memory "
             "objective when there is one, as capacity limits)")] = None,
    objectives: Annotated[str, typer.Option(help="the front's objectives (2 or 3), with --epsilon")]
    = "latency,memory",
    time_limit: Annotated[Optional[float], typer.Option(
        help="seconds for the whole solve or sweep, warm start included")] = None,
    point_limit: Annotated[Optional[float], typer.Option(help="seconds for each sub-solve of a sweep")] = None,
    resume: Annotated[Optional[Path], typer.Option(help="continue the incomplete front in this file")] = None,
    workers: Annotated[Optional[int], typer.Option(help="CP-SAT workers (default: chosen per problem class)")]
    = None,
    seed: Annotated[int, typer.Option(help="random seed of the engine")] = 0,
    engine: Annotated[str, typer.Option(help="cpsat, or milp / milp-highs (PuLP cross-check, no memory model)")]
    = "cpsat",
    memory_plan: Annotated[Optional[MemoryPlan], typer.Option(
        help="give every buffer an offset: after (pack the solved schedule) or joint (inside the model; "
             "enables the arena objective)")] = None,
    processors: Processors = None,
    contention: Contention = False,
    platform: PlatformOpt = None,
    dim: Dims = None,
    fuse: Fuse = "none",
    costs: Costs = None,
    precisions: Precisions = None,
    output: Output = None,
    hint: Annotated[bool, typer.Option(help="warm-start from the HEFT schedule (justified when no data moves)")] = True,
    cache: Annotated[bool, typer.Option(help="reuse a stored proven answer to the same request")] = True,
    log: Annotated[bool, typer.Option(help="print the engine's search log on stderr")] = False,
    decompose: Annotated[str, typer.Option(
        help="auto (windows of coarsened layers, then a whole-model polish, for graphs over 100 tasks), "
             "off, or a window size in tasks")] = "auto",
    verify: Annotated[bool, typer.Option(
        "--verify", help="with --epsilon: prove a complete front a second time, every gap re-solved")] = False,
    jobs: Annotated[Optional[int], typer.Option(
        "--jobs", "-j", help="with --epsilon: sub-solves at once in local processes (default: cores / workers)")]
    = None,
    dask: Annotated[Optional[str], typer.Option(
        help="with --epsilon: run the sub-solves on this dask.distributed scheduler (tcp://host:8786)")] = None,
) -> None:
    """Solve exactly: a schedule, or with --epsilon the exact Pareto front.

    Exit 0 when proven (optimal / infeasible / complete front), 3 when not.
    """
    from cpsched import api, engines

    if epsilon is None and (resume is not None or point_limit is not None or verify or jobs or dask):
        raise InputError("--resume, --point-limit, --verify, --jobs and --dask apply only to a front (--epsilon)")
    targets(output, output and output.with_suffix(".txt") if epsilon else None)
    window = parse_decompose(decompose)
    plan = memory_plan.value if memory_plan else None
    instance = load(input, processors, platform, dim, fuse, contention, costs, precisions)
    settings = dict(time_limit=time_limit, workers=workers, seed=seed, engine=engine, decompose=window,
                    memory_plan=plan, hint="auto" if hint else None, cache_results=cache,
                    log=(lambda line: say(line)) if log else None)
    live_ok = engines.get(engine).capabilities.progress
    if epsilon is not None:
        with live(f"sweeping {len(instance.tasks)} tasks with {engine}", instance.units) as report:
            front = api.front(instance, names(objectives), epsilon=epsilon, point_limit=point_limit,
                              resume=resume, progress=report, verify=verify, jobs=jobs, dask=dask, **settings)
        write_front(instance, front, output)
        return
    with live(f"solving {len(instance.tasks)} tasks with {engine}", instance.units) as report:
        schedule = api.solve(instance, names(objective), limits=None, progress=report if live_ok else None,
                             **settings)
    if schedule.solver.get("stopped") == "interrupted" and not schedule.status.has_schedule:
        say("interrupted before any result; nothing written")
        raise typer.Exit(EXIT_INTERRUPTED)
    emit(schedule.to_dict(), output)
    summary(instance, schedule, names(objective))
    if plan and schedule.status.has_schedule and not schedule.memory_plan:
        say(f"no memory plan: {schedule.solver.get('memory_plan', {}).get('error', 'none found')}")
        raise typer.Exit(EXIT_UNPROVEN)
    raise typer.Exit(EXIT_OK if schedule.status.proven else EXIT_UNPROVEN)


def write_front(instance: "Instance", front: "Front", output: Path | None) -> None:
    """Write front.json + front.txt (or JSON on stdout), show the points, exit 0 complete / 3 not."""
    from cpsched.schedule import save_front

    if not front.points and front.meta.get("stopped") == "interrupted":
        say("interrupted before any point; nothing written")
        raise typer.Exit(EXIT_INTERRUPTED)
    if output is None:
        emit(front.to_dict(), None)
    else:
        say(f"wrote {output} and {save_front(front, output)}")
    front_summary(instance, front)
    raise typer.Exit(EXIT_OK if front.complete else EXIT_UNPROVEN)


@app.command()
@guarded
def select(
    front_path: Annotated[Path, typer.Argument(metavar="FRONT", help="a cpsched-front/1 file")],
    max_latency: Annotated[Optional[str], typer.Option(help="e.g. 800us, 2ms, or a number in the front's unit")]
    = None,
    max_energy: Annotated[Optional[str], typer.Option(help="e.g. 5mJ, or a number in the front's unit")] = None,
    max_memory: Annotated[Optional[str], typer.Option(help="e.g. 64MiB, or a number in bytes")] = None,
    max_error: Annotated[Optional[str], typer.Option(
        help="an integer in the front's error unit (named modes: the additive proxy of the chosen modes)")] = None,
    minimise: Annotated[str, typer.Option(help="the objective to minimise among the points that fit")]
    = "latency",
    output: Output = None,
) -> None:
    """Runtime selection: the schedule of the best front point within the limits (exit 2 if none fits)."""
    from cpsched import api
    from cpsched.schedule import load_front

    targets(output)
    front = load_front(front_path)
    try:
        point = api.select(front, max_latency=max_latency, max_energy=max_energy, max_memory=max_memory,
                           max_error=max_error, minimise=minimise)
    except InputError as exc:
        raise InputError(f"{front_path}: {message(exc)}") from None
    emit(point.schedule.to_dict(), output)
    values = ", ".join(f"{n} {v:,} {front.units.get(n, '')}".rstrip() for n, v in point.schedule.objectives.items())
    say(f"selected point {front.points.index(point) + 1} of {len(front.points)}: {values}")


@app.command()
@guarded
def memplan(
    buffers_csv: Annotated[Path, typer.Argument(metavar="BUFFERS.csv", help="MiniMalloc CSV: id,lower,upper,size")],
    capacity: Annotated[int, typer.Option(help="the arena size to pack into (bytes)")],
    time_limit: Annotated[Optional[float], typer.Option(help="seconds for the search")] = None,
    minimise: Annotated[bool, typer.Option(help="search the smallest arena that fits")] = False,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="the CSV with an offset column")]
    = None,
) -> None:
    """Pack buffers with fixed lifetimes into an arena (exit 0 packed or proven impossible, 3 nothing found)."""
    from cpsched import memplan as memory
    from cpsched.schedule import Status

    if capacity < 0:
        raise InputError("--capacity must be >= 0")
    if time_limit is not None and time_limit <= 0:
        raise InputError("--time-limit must be > 0")
    targets(output)
    blocks = memory.read_csv(buffers_csv)
    result = memory.pack(blocks, capacity, time_limit, minimise)
    wall = result.info.get("wall_time", 0)
    if result.status is Status.INFEASIBLE:
        say(f"{buffers_csv}: infeasible (proven): no packing fits in {capacity:,} bytes "
            f"(the arena needs >= {result.bound:,}); {wall:.2f} s")
        return
    if not result.status.has_schedule:
        say(f"{buffers_csv}: nothing found within the time limit (arena >= {result.bound:,}); no file written")
        raise typer.Exit(EXIT_UNPROVEN)
    if output is None:
        sys.stdout.write(memory.csv_text(blocks, result.offsets))
    else:
        memory.write_csv(output, blocks, result.offsets)
    proof = "minimal (proven)" if result.status is Status.OPTIMAL else "not proven minimal" if minimise else ""
    say(f"{buffers_csv}: packed {len(blocks)} buffers, arena {result.arena:,} of {capacity:,} bytes"
        + (f", {proof}" if proof else "") + f"; lower bound {result.bound:,}; {wall:.2f} s")
    if minimise and result.status is not Status.OPTIMAL:
        raise typer.Exit(EXIT_UNPROVEN)


class Heuristic(str, Enum):
    host = "host"
    fastest = "fastest"
    heft = "heft"
    nsga2 = "nsga2"


@app.command()
@guarded
def heuristic(
    name: Annotated[Heuristic, typer.Argument(help="the heuristic")],
    input: InputArg,
    processors: Processors = None,
    contention: Contention = False,
    platform: PlatformOpt = None,
    dim: Dims = None,
    fuse: Fuse = "none",
    costs: Costs = None,
    precisions: Precisions = None,
    population: Annotated[int, typer.Option(help="nsga2: population size")] = 100,
    generations: Annotated[int, typer.Option(help="nsga2: generations")] = 200,
    seed: Annotated[int, typer.Option(help="nsga2: random seed (same seed, same front)")] = 0,
    objectives: Annotated[str, typer.Option(help="nsga2: the objectives of its front")] = "latency,memory",
    output: Output = None,
) -> None:
    """Run a heuristic; write its validated schedule (nsga2: a front, never complete); exit 3 if none."""
    from cpsched import api
    from cpsched.schedule import Front

    targets(output, output and output.with_suffix(".txt") if name is Heuristic.nsga2 else None)
    instance = load(input, processors, platform, dim, fuse, contention, costs, precisions)
    try:
        result = api.heuristic(name.value, instance, objectives=names(objectives), population=population,
                               generations=generations, seed=seed)
    except NoSchedule as exc:
        say(f"{name.value}: no schedule: {exc}")
        raise typer.Exit(EXIT_UNPROVEN) from None
    if isinstance(result, Front):
        if output is None:
            emit(result.to_dict(), None)
        else:
            from cpsched.schedule import save_front
            save_front(result, output)
        front_summary(instance, result)
        return
    emit(result.to_dict(), output)
    summary(instance, result, [])


@app.command()
@guarded
def compare(
    reference_path: Annotated[Path, typer.Argument(metavar="REFERENCE", help="the reference (exact) front")],
    other_path: Annotated[Path, typer.Argument(metavar="OTHER", help="the front to measure")],
    ref: Annotated[Optional[list[float]], typer.Option(
        help="reference point in normalised space, one value per objective or one for all (>= 1; default 1.1)")]
    = None,
    output: Output = None,
) -> None:
    """Quality of a front against a reference: hypervolumes and ratio, IGD+, additive epsilon, exact hits."""
    from cpsched import api
    from cpsched.schedule import load_front

    targets(output)
    reference, other = load_front(reference_path), load_front(other_path)
    result = api.compare(reference, other, ref[0] if ref and len(ref) == 1 else ref)
    emit(result, output)
    hv = result["hypervolume"]
    say(f"hypervolume {hv['other']:.6g} / {hv['reference']:.6g} = ratio {result['hypervolume_ratio']:.4f}; "
        f"IGD+ {result['igd_plus']}; additive epsilon {result['epsilon_additive']}; "
        f"found {result['found_exactly']} of {result['reference_points']} reference points exactly")


@app.command()
@guarded
def validate(
    instance_path: Annotated[Path, typer.Argument(metavar="INSTANCE", help="instance JSON, STG graph or model")],
    schedule_path: Annotated[Path, typer.Argument(metavar="SCHEDULE", help="schedule JSON")],
    processors: Processors = None,
    contention: Contention = False,
    platform: PlatformOpt = None,
    dim: Dims = None,
    fuse: Fuse = "none",
    costs: Costs = None,
    precisions: Precisions = None,
) -> None:
    """Check a schedule against its instance; exit 0 valid, 1 invalid, 2 bad input."""
    from cpsched import api
    from cpsched.schedule import load_schedule

    instance = load(instance_path, processors, platform, dim, fuse, contention, costs, precisions)
    schedule = load_schedule(schedule_path)
    if not schedule.status.has_schedule:
        print(f"no schedule to check (status {schedule.status}): {schedule.reason or ''}".rstrip(": "))
        return
    try:
        report = api.validate(instance, schedule)
    except InputError as exc:
        raise exc.in_file(schedule_path) from None
    for v in report.violations:
        print(v)
    values = ", ".join(f"{k} {v}" for k, v in report.objectives.items())
    peaks = ", ".join(f"{d} {p}" for d, p in report.peaks.items())
    verdict = "valid" if report.valid else f"INVALID ({len(report.violations)} violations)"
    print(f"{verdict}: {values}; peak memory per device: {peaks}")
    if not report.valid:
        raise typer.Exit(EXIT_INVALID)


@app.command()
@guarded
def inspect(
    input: InputArg,
    platform: PlatformOpt = None,
    dim: Dims = None,
    fuse: Fuse = "none",
    costs: Costs = None,
    precisions: Precisions = None,
    processors: Processors = None,
    contention: Contention = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON on stdout")] = False,
) -> None:
    """Summarise a model or instance: tasks, FLOPs and MACs, bytes, op types, device support."""
    from cpsched.inputs import describe, parse_dims

    report = describe(input, processors, platform, parse_dims(dim), fuse, contention, costs, precisions)
    if as_json:
        emit(report, None)
        return
    lines = [f"{report['name']}: {report['tasks']} tasks, {report['tensors']} tensors"]
    if "macs" in report:
        lines.append(f"compute: {report['macs'] / 1e9:,.3f} GMACs, {report['flops'] / 1e9:,.3f} GFLOPs")
    lines.append(f"weights: {report['weight_bytes']:,} bytes; activations: {report['activation_bytes']:,} bytes")
    lines.append("op types: " + ", ".join(f"{op} {n}" for op, n in report["ops"].items()))
    if report.get("groups"):
        lines.append(f"fusion ({report.get('fusion', 'instance')}): {report.get('tasks_unfused', report['tasks'])} -> "
                     f"{report['tasks']} tasks; groups: "
                     + ", ".join(f"{pattern} {n}" for pattern, n in report["groups"].items()))
    if report.get("unknown_ops"):
        lines.append("costed by bytes only: " + ", ".join(f"{op} {n}" for op, n in report["unknown_ops"].items()))
    if "devices" in report:
        lines.append(f"devices ({report.get('platform', 'instance')}): "
                     + ", ".join(f"{d} supports {n}" for d, n in report["devices"].items()))
    for d, n in report.get("measured", {}).items():
        lines.append(f"measured costs: {d} {n} of {report['devices'][d]} tasks")
    for d, n in report.get("modes", {}).items():
        lines.append(f"named modes (precision, frequency): {d} {n} of {report['devices'][d]} tasks")
    print("\n".join(lines))


@app.command()
@guarded
def quantize(
    input: Annotated[Path, typer.Argument(help="ONNX model (.onnx) or a bundled model name")],
    device: Annotated[str, typer.Option(help="the platform device id the int8 figures are for, e.g. npu")],
    calibration: Annotated[int, typer.Option(help="seeded random inputs for MinMax calibration")] = 8,
    runs: Annotated[int, typer.Option(help="profiled runs per model after one warm-up")] = 10,
    threads: Annotated[Optional[int], typer.Option(help="onnxruntime intra-op threads (default: its own)")]
    = None,
    seed: Annotated[int, typer.Option(help="seed of the inputs (and of the weights of a light model)")] = 0,
    dim: Dims = None,
    output: Output = None,
) -> None:
    """Quantise every Conv/Gemm/MatMul to int8 (onnxruntime, static QDQ) and write a cpsched-precisions/1
    table: each node's fp32 and int8 time and its sensitivity (the error with only it quantised)."""
    from cpsched import quantization
    from cpsched.inputs import is_model, parse_dims

    if not is_model(input):
        raise InputError(f"{input}: quantize needs an ONNX model or a bundled model name")
    if runs < 1 or calibration < 1:
        raise InputError("--runs and --calibration must be >= 1")
    targets(output)
    with err.status(f"quantising {input} with onnxruntime ...") as status:
        table = quantization.quantize(input, device, calibration=calibration, seed=seed, runs=runs,
                                      threads=threads, dims=parse_dims(dim), progress=status.update)
    emit(table, output)
    whole = table["all_int8"]
    weights = " (random weights: the model's are placeholders)" if table["weights"] == "random" else ""
    say(f"{input}: {len(table['nodes'])} nodes quantised{weights}; all int8: error {whole['error']:,} ppm "
        f"(1 - cosine), sum of the per-node errors (the proxy) {table['sum_of_errors']:,} ppm")


@app.command()
@guarded
def profile(
    input: Annotated[Path, typer.Argument(help="ONNX model (.onnx) or a bundled model name")],
    device: Annotated[str, typer.Option(help="the platform device id these times are for, e.g. cpu")],
    provider: Annotated[str, typer.Option(help="onnxruntime execution provider")] = "CPUExecutionProvider",
    runs: Annotated[int, typer.Option(help="profiled runs after one warm-up")] = 20,
    threads: Annotated[Optional[int], typer.Option(help="onnxruntime intra-op threads (default: its own)")]
    = None,
    dim: Dims = None,
    output: Output = None,
) -> None:
    """Measure per-node times with onnxruntime and write a cpsched-costs/1 table (median, p90 in us)."""
    from cpsched import profiling
    from cpsched.inputs import is_model, parse_dims

    if not is_model(input):
        raise InputError(f"{input}: profile needs an ONNX model or a bundled model name")
    if runs < 1:
        raise InputError("--runs must be >= 1")
    targets(output)
    with err.status(f"profiling {input} with onnxruntime ({provider}) ..."):
        costs = profiling.profile(input, device, provider=provider, runs=runs, threads=threads,
                                  dims=parse_dims(dim))
    emit(costs, output)
    folded = sum(1 for n in costs["nodes"].values() if n.get("folded"))
    say(f"{input}: {len(costs['nodes'])} nodes timed ({folded} folded by cpsched: recorded, no task), "
        f"{provider}, {threads or 'default'} threads, {runs} runs")


@app.command()
@guarded
def measure(
    input: Annotated[Path, typer.Argument(help="ONNX model (.onnx) or a bundled model name")],
    device: Annotated[str, typer.Option(help="the platform device the model runs on, e.g. cpu")],
    platform: Annotated[str, typer.Option("--platform", "-p", help="platform for the predictions")] = "edge",
    costs: Annotated[Optional[Path], typer.Option(help="a cpsched-costs/1 table for the calibrated prediction")]
    = None,
    runs: Annotated[int, typer.Option(help="timed runs after one warm-up")] = 20,
    threads: Annotated[Optional[int], typer.Option(help="onnxruntime intra-op threads")] = None,
    provider: Annotated[str, typer.Option(help="onnxruntime execution provider")] = "CPUExecutionProvider",
    dim: Dims = None,
    output: Output = None,
) -> None:
    """Time whole-model inference and compare it with cpsched's predictions (roofline, calibrated)."""
    from rich.table import Table

    from cpsched import profiling
    from cpsched.inputs import is_model, parse_dims

    if not is_model(input):
        raise InputError(f"{input}: measure needs an ONNX model or a bundled model name")
    if runs < 1:
        raise InputError("--runs must be >= 1")
    targets(output)
    with err.status(f"timing {input} with onnxruntime ({provider}) ..."):
        result = profiling.against_predictions(input, device, platform, costs, runs=runs, threads=threads,
                                               provider=provider, dims=parse_dims(dim))
    emit(result, output)
    table = Table(show_edge=False, header_style="bold")
    for col in ("", "latency (us)", "error vs p50"):
        table.add_column(col, justify="left" if not col else "right")
    table.add_row("measured p50", f"{result['p50_us']:,.0f}", "")
    table.add_row("measured p99", f"{result['p99_us']:,.0f}", "")
    for k, v in result["predicted"].items():
        table.add_row(f"predicted, {k}", f"{v['latency_us']:,}", f"{v['error']:+.1%}")
    err.print(table)
    say(f"throughput {result['throughput_per_s']:,.1f} inferences/s; onnxruntime optimisations off "
        f"(same as profile); platform {result['platform']}, everything on {device}")
    if "folded_us" in result:
        say(f"of the measured time, {result['folded_us']:,.0f} us/run is in nodes cpsched folds "
            "(not in predictions)")


@app.command()
@guarded
def plot(
    result: Annotated[Path, typer.Argument(metavar="RESULT", help="a schedule or front JSON")],
    output: Annotated[Path, typer.Option("--output", "-o", help="the image, .png or .svg")],
    instance_path: Annotated[Optional[Path], typer.Option(
        "--instance", help="schedule: its instance (JSON, STG or model with --platform)")] = None,
    processors: Processors = None,
    contention: Contention = False,
    platform: PlatformOpt = None,
    dim: Dims = None,
    fuse: Fuse = "none",
    costs: Costs = None,
    precisions: Precisions = None,
    memory: Annotated[bool, typer.Option("--memory", help="schedule: add memory-over-time panels per device")]
    = False,
    highlight: Annotated[Optional[list[int]], typer.Option(
        "--highlight", help="front: ring point K (1-based, as in the solve table)")] = None,
    compare: Annotated[Optional[list[Path]], typer.Option(
        "--compare", help="front: overlay another front (e.g. a heuristic's)")] = None,
) -> None:
    """Draw a schedule (Gantt, with --memory the memory over time) or a front (2-D, or 3 projections)."""
    from cpsched.files import read_json
    from cpsched.schedule import FORMAT as SCHEDULE_FORMAT
    from cpsched.schedule import FRONT_FORMAT, load_front, load_schedule

    targets(output)
    data = read_json(result)
    kind = data.get("format") if isinstance(data, dict) else None
    if kind not in (SCHEDULE_FORMAT, FRONT_FORMAT):
        raise InputError(f"{result}: format {kind!r} is neither a schedule ({SCHEDULE_FORMAT}) "
                         f"nor a front ({FRONT_FORMAT})")
    from cpsched import plots  # matplotlib only for this command

    if kind == SCHEDULE_FORMAT:
        if instance_path is None:
            raise InputError("plotting a schedule needs --instance INSTANCE")
        if highlight or compare:
            raise InputError("--highlight and --compare apply only to a front")
        instance = load(instance_path, processors, platform, dim, fuse, contention, costs, precisions)
        path = plots.plot_schedule(instance, load_schedule(result), output, memory=memory)
    else:
        if memory or instance_path is not None:
            raise InputError("--memory and --instance apply only to a schedule")
        others = [load_front(p) for p in compare or []]
        labels = [o.meta.get("method") or p.stem for o, p in zip(others, compare or [])]
        path = plots.plot_front(load_front(result), output, [k - 1 for k in highlight] if highlight else None,
                                others, labels)
    say(f"wrote {path}")


@app.command("import")
@guarded
def import_(
    input: InputArg,
    processors: Processors = None,
    contention: Contention = False,
    platform: PlatformOpt = None,
    dim: Dims = None,
    fuse: Fuse = "none",
    costs: Costs = None,
    precisions: Precisions = None,
    output: Output = None,
) -> None:
    """Convert an input (ONNX model + platform, STG graph, instance JSON) into a cpsched-instance/1 file."""
    from cpsched.instance import save_instance

    targets(output)
    instance = load(input, processors, platform, dim, fuse, contention, costs, precisions)
    if output is None:
        emit(instance.to_dict(), None)
    else:
        save_instance(instance, output)
    say(f"{instance.name}: {len(instance.tasks)} tasks, {len(instance.tensors)} tensors, "
        f"{len(instance.devices)} devices")


@app.command("export")
@guarded
def export_command(
    schedule_path: Annotated[Path, typer.Argument(metavar="SCHEDULE", help="a cpsched-schedule/1 file")],
    model: Annotated[str, typer.Option("--model", help="the ONNX model (or bundled name) it was solved for")],
    output: Annotated[Path, typer.Option("--output", "-o", help="the plan folder to write")],
    platform: Annotated[Optional[str], typer.Option(
        "--platform", "-p", help="the platform it was solved on (default: the preset its instance names)")] = None,
    dim: Dims = None,
    fuse: Annotated[Optional[str], typer.Option(
        "--fuse", help="the fusion it was solved with (default: the one whose tasks are the schedule's)")] = None,
    costs: Costs = None,
    precisions: Precisions = None,
) -> None:
    """Write a schedule as a deployable plan: one ONNX subgraph per part and manifest.json."""
    from cpsched import api
    from cpsched.inputs import parse_dims

    targets(output / "manifest.json")
    plan = api.export(schedule_path, model, output, platform=platform, dims=parse_dims(dim) or None, fuse=fuse,
                      costs=costs, precisions=precisions)
    per = ", ".join(f"{d} {len(plan.on(d))}" for d in plan.devices if plan.on(d))
    say(f"wrote {output}: {len(plan.parts)} subgraphs ({per}), {len(plan.copies)} transfers, manifest.json; "
        f"predicted latency {plan.predicted['latency']:,} us")


@app.command("run")
@guarded
def run_command(
    plan_path: Annotated[Optional[Path], typer.Argument(metavar="PLAN", help="a plan folder (cpsched export)")]
    = None,
    front_path: Annotated[Optional[Path], typer.Option(
        "--front", help="instead of PLAN: run every point of this front (needs --model)")] = None,
    model: Annotated[Optional[str], typer.Option("--model", help="with --front: the model it was solved for")]
    = None,
    platform: Annotated[Optional[str], typer.Option(
        "--platform", "-p", help="with --front: its platform (default: the preset its instance names)")] = None,
    dim: Dims = None,
    fuse: Annotated[Optional[str], typer.Option("--fuse", help="with --front: its fusion (default: found)")]
    = None,
    costs: Costs = None,
    precisions: Precisions = None,
    runs: Annotated[int, typer.Option(help="timed runs")] = 20,
    warmup: Annotated[int, typer.Option(help="runs before the timed ones")] = 3,
    golden: Annotated[Optional[Path], typer.Option(help="inputs.npz (default: fixed-seed random inputs)")] = None,
    atol: Annotated[float, typer.Option(help="largest max absolute error an output may have")] = 1e-4,
    reference: Annotated[Optional[str], typer.Option(
        help="the unsplit model to compare with (default: the plan's source model)")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="write the report JSON here")] = None,
) -> None:
    """Execute a plan with onnxruntime: p50/p99/throughput against the predicted makespan, and the outputs
    against the unsplit model (exit 1 when an output differs beyond --atol)."""
    from rich.table import Table

    from cpsched import api
    from cpsched.inputs import parse_dims

    if (plan_path is None) == (front_path is None):
        raise InputError("give a PLAN folder or --front FRONT (one of them)")
    if front_path is not None and model is None:
        raise InputError("--front needs --model (the model the front was solved for)")
    targets(output)
    if front_path is not None:
        with err.status(f"running every point of {front_path} ..."):
            result = api.run_front(front_path, model, platform=platform, dims=parse_dims(dim) or None, fuse=fuse,
                                   costs=costs, precisions=precisions, runs=runs, warmup=warmup, golden=golden,
                                   atol=atol)
        if output is not None:
            emit(result, output)
        table = Table(show_edge=False, header_style="bold")
        others = [k for k, name in enumerate(result["objectives"]) if name != "latency"]
        precision = any("int8_error" in r for r in result["points"])
        for col in ("#", *(label(result["objectives"][k]) for k in others), "predicted (us)", "p50 (us)", "p99 (us)",
                    "error", "max abs err", *(("int8 tasks", "measured error (ppm)") if precision else ())):
            table.add_column(col, justify="right")
        for r in result["points"]:
            int8 = (str(r["int8_tasks"]), f"{r['int8_error']['error']:,}") if precision else ()
            table.add_row(str(r["point"]), *(f"{r['values'][k]:,}" for k in others), f"{r['predicted_us']:,}",
                          f"{r['p50_us']:,.0f}", f"{r['p99_us']:,.0f}", f"{r['error']:+.1%}", f"{r['max_abs']:.2e}",
                          *int8)
        err.print(table)
        if precision:
            say("measured error: the model with exactly each point's int8 tasks quantised, against fp32 (as "
                "cpsched quantize measures); the plans themselves ran in fp32")
        tau = result["kendall_tau"]
        say(f"{len(result['points'])} points; Kendall tau between predicted and measured latency: "
            + ("n/a (fewer than two distinct values)" if tau is None else f"{tau:+.2f}"))
        failed = [r["point"] for r in result["points"] if r["failed"]]
        if failed:
            say(f"error: outputs differ beyond {atol:g} at points {', '.join(map(str, failed))}")
            raise typer.Exit(EXIT_INVALID)
        return
    with err.status(f"running {plan_path} ..."):
        report = api.run(plan_path, runs=runs, warmup=warmup, golden=golden, atol=atol, reference=reference)
    if output is not None:
        emit(report.to_dict(), output)
    table = Table(show_edge=False, header_style="bold")
    for col in ("", "latency (us)", "vs p50"):
        table.add_column(col, justify="left" if not col else "right")
    table.add_row("measured p50", f"{report.p50_us:,.0f}", "")
    table.add_row("measured p99", f"{report.p99_us:,.0f}", "")
    if report.predicted_us is not None:
        table.add_row("predicted (schedule)", f"{report.predicted_us:,}", f"{report.error:+.1%}")
    err.print(table)
    say(f"throughput {report.throughput_per_s:,.1f} inferences/s ({report.runs} runs after {report.warmup} "
        "warm-up)")
    for name, v in report.outputs.items():
        say(f"output {name}: max abs error {v['max_abs']:.3g}, cosine {v['cosine']:.6f}")
    if report.precision:
        p = report.precision
        say(f"precision: {p['int8']} nodes in int8; error proxy the solver used {p['proxy']:,} ppm, measured "
            f"{p['measured']['error']:,} ppm (1 - cosine, the model with exactly these nodes quantised; "
            "the subgraphs ran in fp32)")
    if report.modelled:
        say(f"devices {', '.join(report.modelled)} name no execution provider in their platform: their "
            "subgraphs ran on this machine's CPU, so the prediction is for the platform, not for this run")
    if report.failed:
        say(f"error: {', '.join(report.failed)} differ from the unsplit model beyond --atol {atol:g}")
        raise typer.Exit(EXIT_INVALID)


@app.command("bench")
@guarded
def bench_command(
    suite: Annotated[str, typer.Argument(
        help="a suite YAML, or the name of one in instances/ (smoke, stg50, cnn-edge, ...)")],
    output: Annotated[Optional[Path], typer.Option(
        "--output", "-o", help="write the rows as CSV here and the markdown table next to it (.md)")] = None,
    jobs: Annotated[Optional[int], typer.Option(
        "--jobs", "-j", help="worker processes (default: half the CPUs, CP-SAT is multi-threaded)")] = None,
    dask: Annotated[Optional[str], typer.Option(
        help="run on this dask.distributed scheduler (e.g. tcp://host:8786) instead of local processes")] = None,
    records: Annotated[Optional[Path], typer.Option(
        help="save the schedule of every entry that closes or improves a known open range, or proves "
             "an optimum where none is known, here")] = None,
    time_limit: Annotated[Optional[float], typer.Option(help="seconds per entry, instead of the suite's")] = None,
    decompose: Annotated[Optional[str], typer.Option(
        help="auto, off or a window size for every entry, instead of the suite's")] = None,
    confirm: Annotated[Optional[float], typer.Option(
        help="seconds the MILP engine gets to prove each proven optimum again in its own formulation "
             "(the table's 'MILP confirms' column), instead of the suite's")] = None,
) -> None:
    """Run a benchmark suite: solve every entry, compare with the known values, tabulate.

    Exit 0 when every row ran and none contradicts its known value, 1 otherwise.
    """
    import dataclasses

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from cpsched import bench as benchmarks

    if jobs is not None and jobs < 1:
        raise InputError("--jobs must be >= 1")
    for name, seconds in (("--time-limit", time_limit), ("--confirm", confirm)):
        if seconds is not None and seconds <= 0:
            raise InputError(f"{name} must be > 0")
    targets(output, output and output.with_suffix(".md"))
    loaded = benchmarks.load_suite(benchmarks.find_suite(suite))
    overrides = {"time_limit": time_limit, "decompose": decompose and parse_decompose(decompose), "confirm": confirm}
    overrides = {k: v for k, v in overrides.items() if v is not None}
    if overrides:
        loaded = dataclasses.replace(loaded, entries=tuple(dataclasses.replace(e, **overrides)
                                                           for e in loaded.entries))
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[last]}"))
    with Progress(*columns, console=err, transient=False) as progress:
        task = progress.add_task(loaded.name, total=len(loaded.entries), last="")
        rows = benchmarks.run_suite(loaded, jobs, dask, on_row=lambda row: progress.update(
            task, advance=1, last=f"{row.instance or row.input} {row.status} {row.match}"))
    if output is None:
        sys.stdout.write(benchmarks.markdown(rows, loaded.description))
    else:
        written = benchmarks.write_results(rows, output, loaded.description)
        say("wrote " + " and ".join(map(str, written)))
    for line in benchmarks.summary(rows):
        say(line)
    if records is not None:
        for path in benchmarks.save_records(rows, records):
            say(f"record: {path}")
    bad = [r for r in rows if r.status == benchmarks.ERROR or r.match == "no"]
    for row in bad:
        say(f"{row.input}: {row.status} {row.match} {row.error or ''}".rstrip())
    raise typer.Exit(EXIT_INVALID if bad else EXIT_OK)


def main() -> None:
    """Run the command under cpsched's SIGINT handling (:func:`cpsched.interrupt.guard`)."""
    from cpsched import interrupt

    with interrupt.guard():
        try:
            app()
        except KeyboardInterrupt:  # a second Ctrl-C outside a command: no traceback
            err.print("interrupted before any result", markup=False, soft_wrap=True)
            sys.exit(EXIT_INTERRUPTED)
