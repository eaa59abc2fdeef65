"""The ``cpsched`` command: a thin shell over the library.

Results go to stdout or ``-o``; progress, summaries and errors go to stderr.
Exit codes: 0 proven (optimal, or infeasible with the file saying so; a valid
schedule for ``validate``), 1 invalid schedule (``validate``), 2 bad input or
usage, 3 a result written but not proven (feasible / unknown, time limit),
70 internal error.
"""

from __future__ import annotations

import functools
import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from cpsched.engines import cpsat
from cpsched.errors import InputError, NoSchedule
from cpsched.heuristics.heft import heft
from cpsched.instance import Instance, save_instance, write_json
from cpsched.io.inputs import load_input
from cpsched.schedule import OBJECTIVES, Schedule, load_schedule
from cpsched.validate import validate as check

EXIT_OK, EXIT_INVALID, EXIT_INPUT, EXIT_UNPROVEN, EXIT_INTERNAL = 0, 1, 2, 3, 70

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Exact scheduling of DNN computation graphs onto heterogeneous devices.")
err = Console(stderr=True, highlight=False)

InputArg = Annotated[Path, typer.Argument(help="instance JSON (cpsched-instance/1) or STG graph (.stg)")]
Processors = Annotated[Optional[int], typer.Option("--processors", "-m",
                                                   help="identical processors for an STG graph")]
Output = Annotated[Optional[Path], typer.Option("--output", "-o", help="write here instead of stdout")]


def guarded(command):
    """Turn library errors into one line on stderr and the documented exit codes."""
    @functools.wraps(command)
    def run(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except typer.Exit:
            raise
        except InputError as exc:
            err.print(f"error: {exc}", markup=False, soft_wrap=True)
            raise typer.Exit(EXIT_INPUT) from None
        except KeyboardInterrupt:
            err.print("interrupted", markup=False, soft_wrap=True)
            raise typer.Exit(130) from None
        except Exception as exc:  # noqa: BLE001 - the documented last resort
            err.print(f"internal error: {type(exc).__name__}: {exc}".splitlines()[0], markup=False, soft_wrap=True)
            raise typer.Exit(EXIT_INTERNAL) from None
    return run


def emit(data: dict, output: Path | None) -> None:
    """Write a result atomically to ``output``, or print it on stdout."""
    if output is None:
        sys.stdout.write(json.dumps(data, indent=1) + "\n")
    else:
        write_json(output, data)


def parse_objectives(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in OBJECTIVES]
    if not names or bad or len(set(names)) != len(names):
        raise InputError(f"--objective: expected a comma-separated list of distinct names from "
                         f"{', '.join(OBJECTIVES)} (got {text!r})")
    return names


def summary(instance: Instance, schedule: Schedule, minimised: list[str]) -> None:
    """Status, each objective with its bound and gap, and the time, on stderr."""
    wall = schedule.solver.get("wall_time")
    err.print(f"[bold]{instance.name or 'instance'}[/]: {len(instance.tasks)} tasks, "
              f"{len(instance.devices)} devices — status [bold]{schedule.status}[/]"
              + (f" in {wall:.2f} s" if wall is not None else ""))
    if schedule.reason:
        err.print(f"reason: {schedule.reason}", markup=False, soft_wrap=True)
    if not schedule.status.has_schedule:
        return
    table = Table(show_edge=False, header_style="bold")
    for col in ("objective", "value", "unit", "bound", "gap"):
        table.add_column(col, justify="left" if col in ("objective", "unit") else "right")
    unit = {"latency": instance.units.get("time", ""), "energy": instance.units.get("energy", ""),
            "memory": instance.units.get("size", "")}
    for name in OBJECTIVES:
        value = schedule.objectives[name]
        bound = schedule.bounds.get(name)
        gap = "" if bound is None else f"{(value - bound) / value:.1%}" if value else "0.0%"
        mark = " *" if name in minimised else ""
        table.add_row(name + mark, f"{value:,}", unit[name], "" if bound is None else f"{bound:,}", gap)
    err.print(table)
    used = {}
    for p in schedule.tasks.values():
        used[p.device] = used.get(p.device, 0) + 1
    err.print("placement: " + ", ".join(f"{d} {n}" for d, n in used.items())
              + f"; {len(schedule.transfers)} transfers   (* minimised)")


@app.command()
@guarded
def solve(
    input: InputArg,
    objective: Annotated[str, typer.Option(help="objective, or a lexicographic list such as latency,energy")]
    = "latency",
    time_limit: Annotated[Optional[float], typer.Option(help="seconds for the whole solve")] = None,
    workers: Annotated[Optional[int], typer.Option(help="CP-SAT workers (default: chosen per problem class)")]
    = None,
    seed: Annotated[int, typer.Option(help="CP-SAT random seed")] = 0,
    processors: Processors = None,
    output: Output = None,
    hint: Annotated[bool, typer.Option(help="warm-start from the HEFT schedule")] = True,
    log: Annotated[bool, typer.Option(help="print the CP-SAT search log on stderr")] = False,
) -> None:
    """Solve exactly with CP-SAT and write the schedule JSON (exit 0 proven, 3 not proven)."""
    objectives = parse_objectives(objective)
    if time_limit is not None and time_limit <= 0:
        raise InputError("--time-limit must be > 0")
    if workers is not None and workers < 1:
        raise InputError("--workers must be >= 1")
    instance = load_input(input, processors)
    start = heft_or_none(instance) if hint else None
    options = cpsat.Options(time_limit=time_limit, workers=workers, seed=seed,
                            log=(lambda line: err.print(line, markup=False, soft_wrap=True)) if log else None)
    with err.status(f"solving {len(instance.tasks)} tasks with CP-SAT ..."):
        schedule = cpsat.solve(instance, objectives, options, hint=start)
    emit(schedule.to_dict(), output)
    summary(instance, schedule, objectives)
    raise typer.Exit(EXIT_OK if schedule.status.proven else EXIT_UNPROVEN)


def heft_or_none(instance: Instance) -> Schedule | None:
    """HEFT's schedule as a warm start, or None when HEFT finds none (the solver decides)."""
    try:
        return heft(instance)
    except NoSchedule:
        return None


class Heuristic(str, Enum):
    heft = "heft"


@app.command()
@guarded
def heuristic(
    name: Annotated[Heuristic, typer.Argument(help="the heuristic")],
    input: InputArg,
    processors: Processors = None,
    output: Output = None,
) -> None:
    """Run a heuristic and write its (validated) schedule; exit 3 if it finds none."""
    instance = load_input(input, processors)
    try:
        schedule = heft(instance)
    except NoSchedule as exc:
        err.print(f"{name.value}: no schedule: {exc}", markup=False, soft_wrap=True)
        raise typer.Exit(EXIT_UNPROVEN) from None
    emit(schedule.to_dict(), output)
    summary(instance, schedule, [])


@app.command()
@guarded
def validate(
    instance_path: Annotated[Path, typer.Argument(metavar="INSTANCE", help="instance JSON or STG graph")],
    schedule_path: Annotated[Path, typer.Argument(metavar="SCHEDULE", help="schedule JSON")],
    processors: Processors = None,
) -> None:
    """Check a schedule against its instance; exit 0 valid, 1 invalid, 2 bad input."""
    instance = load_input(instance_path, processors)
    schedule = load_schedule(schedule_path)
    report = check(instance, schedule)
    if not schedule.status.has_schedule:
        print(f"no schedule to check (status {schedule.status}): {schedule.reason or ''}".rstrip(": "))
        return
    for v in report.violations:
        print(v)
    values = ", ".join(f"{k} {v}" for k, v in report.objectives.items())
    peaks = ", ".join(f"{d} {p}" for d, p in report.peaks.items())
    verdict = "valid" if report.valid else f"INVALID ({len(report.violations)} violations)"
    print(f"{verdict}: {values}; peak memory per device: {peaks}")
    if not report.valid:
        raise typer.Exit(EXIT_INVALID)


@app.command("import")
@guarded
def import_(
    input: InputArg,
    processors: Processors = None,
    output: Output = None,
) -> None:
    """Convert an input (STG graph, instance JSON) into a cpsched-instance/1 file."""
    instance = load_input(input, processors)
    if output is None:
        emit(instance.to_dict(), None)
    else:
        save_instance(instance, output)
    err.print(f"{instance.name}: {len(instance.tasks)} tasks, {len(instance.tensors)} tensors, "
              f"{len(instance.devices)} devices", markup=False, soft_wrap=True)


def main() -> None:
    app()
