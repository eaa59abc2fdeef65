"""Export a schedule as ONNX subgraphs, one per part of its plan, and the manifest.

:func:`export` takes a schedule and the model it was solved for:

1. :func:`match` finds the instance the schedule belongs to: the model read on
   the schedule's platform, with the fusion whose tasks are exactly the
   schedule's (or the one given); a schedule of another model, with a task the
   model lacks, or not valid for the instance is an InputError;
2. :func:`cpsched.plan.cut` cuts the schedule into parts;
3. the model is read with its weights, its symbolic dims pinned and its shapes
   inferred; the constants cpsched folds (initializers, and for the bundled
   ``light_*`` models the ``ConstantOfShape`` nodes standing for the weights)
   are computed once, with ONNX's reference evaluator, and become initializers,
   so that a subgraph holds its tasks' nodes and nothing else;
4. each part is cut out with ONNX's own :class:`onnx.utils.Extractor`
   (from its input tensors to its output tensors; shapes kept, weights
   carried), checked to hold exactly its tasks' nodes (fused tasks: their
   members), saved as ``<part>.onnx`` and checked by ``onnx.checker``;
5. ``manifest.json`` (:mod:`cpsched.plan`) lists, per subgraph, its device (with
   the platform's ``provider`` and ``threads``), inputs, outputs, predecessors
   and span, and per transfer its tensor, link and span.

The folder is written beside its target and moved into place at the end: an
error leaves nothing behind, and a folder holding an earlier plan is replaced.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from cpsched.errors import InputError
from cpsched.instance import Instance
from cpsched.io.onnx import graph_inputs, infer_shapes, pin_dims, resolve_model
from cpsched.plan import MANIFEST, Plan, cut, save_plan, with_files
from cpsched.precisions import int8_nodes
from cpsched.profiling import node_names
from cpsched.schedule import Schedule
from cpsched.validator import objectives, validate

FUSIONS = ("none", "elementwise", "standard")


def match(model: str | Path, schedule: Schedule, platform: str | Path | None = None,
          dims: Mapping[str, int] | None = None, fuse: str | None = None,
          costs: Sequence[str | Path] | None = None, precisions: Sequence[str | Path] | None = None) -> Instance:
    """The instance of ``model`` that ``schedule`` is a valid schedule of (module docstring, step 1).

    ``platform`` defaults to the preset named after the ``@`` of the schedule's
    instance name; ``fuse`` None tries every fusion mode.
    """
    from cpsched.inputs import load_input
    from cpsched.platforms import PRESETS

    if platform is None:
        named = schedule.instance.rpartition("@")[2]
        if named not in PRESETS:
            raise InputError(f"schedule of {schedule.instance!r}: name its platform (--platform)")
        platform = named
    if not schedule.status.has_schedule:
        raise InputError(f"schedule of {schedule.instance!r} has no tasks (status {schedule.status})")
    wanted = set(schedule.tasks)
    closest = None
    for mode in ([fuse] if fuse else FUSIONS):
        instance = load_input(model, platform=platform, dims=dims, fuse=mode, costs=costs, precisions=precisions)
        have = {t.id for t in instance.tasks}
        if have == wanted:
            report = validate(instance, schedule)
            if not report.valid:
                raise InputError(f"schedule of {schedule.instance!r} is not valid for {instance.name} "
                                 f"(fusion {mode}): {report.violations[0]} (solved with other costs or another "
                                 "platform? give the same --platform, --costs and --precisions)")
            return instance
        if closest is None:
            closest = (instance, have)
    instance, have = closest
    lacks, missing = sorted(wanted - have), sorted(have - wanted)
    detail = (f"task {lacks[0]!r} is not in the model ({len(lacks)} such tasks)" if lacks else
              f"it leaves out task {missing[0]!r} of the model ({len(missing)} such tasks)")
    name = instance.name.rpartition("@")[0]
    raise InputError(f"schedule of {schedule.instance!r} is not a schedule of model {name}: {detail}")


def export(schedule: Schedule, instance: Instance, folder: str | Path, platform: str | Path | None = None) -> Plan:
    """Write the plan of ``schedule`` (a valid schedule of ``instance``, read from an ONNX
    model on ``platform``, default the preset named in its meta) into ``folder``: the
    subgraphs and ``manifest.json``.  Returns the plan."""
    from cpsched.platforms import load_platform

    source = instance.meta.get("source")
    if not source:
        raise InputError(f"instance {instance.name} was not read from an ONNX model: nothing to export")
    plat = load_platform(platform or instance.meta.get("platform"))
    dims = dict(instance.meta.get("dims", {}))
    plan = cut(instance, schedule)
    model = with_weights(Path(source), dims)
    extractor = onnx.utils.Extractor(model)
    members = {t.id: instance.groups.get(t.id, (t.id,)) for t in instance.tasks}
    target = Path(folder)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() and (not target.is_dir() or (not (target / MANIFEST).is_file() and any(target.iterdir()))):
        raise InputError(f"{target}: {'a folder that holds no plan' if target.is_dir() else 'not a folder'}; "
                         "choose another (-o)")
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    umask = os.umask(0)
    os.umask(umask)
    work.chmod(0o777 & ~umask)  # a folder like any other, not mkdtemp's private one
    try:
        files = {}
        for part in plan.parts:
            sub = extractor.extract_model(list(part.inputs), list(part.outputs))
            want = [m for v in part.tasks for m in members[v]]
            got = [n.name for n in sub.graph.node]
            if sorted(got) != sorted(want):
                extra = sorted(set(got) - set(want)) or sorted(set(want) - set(got))
                raise InputError(f"subgraph {part.id}: the extracted nodes differ from its tasks' "
                                 f"(e.g. {extra[:3]}): the model and the instance disagree")
            sub.ir_version = model.ir_version
            name = f"{part.id}.onnx"
            _save(sub, work / name)
            try:  # by path: the checker reads models over 2 GiB from their files
                onnx.checker.check_model(str(work / name), full_check=True)
            except Exception as exc:  # noqa: BLE001 -- ValidationError, InferenceError: one line
                raise InputError(f"subgraph {part.id} of the model is not a valid ONNX model "
                                 f"({' '.join(str(exc).split())[:200]})") from None
            files[part.id] = (name, got)
        devices = {d.id: {"provider": d.provider, "threads": d.threads} for d in plat.devices
                   if any(p.device == d.id for p in plan.parts) or d.id == instance.host.id}
        inputs = [_spec(vi) for vi in graph_inputs(model.graph) if vi.name in {i["name"] for i in plan.inputs}]
        described = {"source": str(source), "dims": dims, "fusion": instance.meta.get("fusion", "none"),
                     "platform": plat.name, "costs": dict(instance.meta.get("costs", {}))}
        tables = instance.meta.get("precisions", {})
        if tables:  # what `run` needs to measure the error of the schedule's int8 choice
            first = next(iter(tables.values()))
            described["precision"] = {"int8": int8_nodes(instance, schedule),
                                      "error": objectives(instance, schedule)[0]["error"],
                                      "calibration": first.get("calibration", 8), "seed": first.get("seed", 0)}
        plan = with_files(plan, files, devices, inputs, described)
        save_plan(plan, work)
        if target.exists():
            shutil.rmtree(target)
        os.replace(work, target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return plan


def with_weights(path: Path, dims: Mapping[str, int]) -> onnx.ModelProto:
    """The model with its weights, dims pinned, shapes inferred, every node named as its task,
    and the constants cpsched folds computed into initializers (module docstring, step 3)."""
    path = resolve_model(path)
    try:
        model = onnx.load(path)
    except Exception as exc:  # noqa: BLE001 -- any load failure is "cannot read" to the user
        raise InputError(f"{path}: cannot read the model with its weights ({' '.join(str(exc).split())[:200]})") \
            from None
    pin_dims(model, dims)
    model = infer_shapes(model)
    graph = model.graph
    names, folded = node_names(model)
    kept = [graph.node[i] for i in range(len(graph.node)) if i not in folded]
    needed = {x for node in kept for x in node.input if x}
    made = [o for i in sorted(folded) for o in graph.node[i].output if o in needed]
    values = _evaluate(model, [graph.node[i] for i in sorted(folded)], made) if made else {}
    for i, node in enumerate(graph.node):
        node.name = names[i]
    initializers = [t for t in graph.initializer if t.name in needed]
    initializers += [numpy_helper.from_array(np.asarray(values[n]), n) for n in made]
    new_graph = onnx.helper.make_graph(kept, graph.name, graph_inputs(graph), list(graph.output),
                                       initializer=initializers, value_info=list(graph.value_info))
    out = onnx.helper.make_model(new_graph, opset_imports=list(model.opset_import))
    out.ir_version = max(model.ir_version, 4)  # initializers need not be inputs from IR 4 on
    return out


def _evaluate(model: onnx.ModelProto, nodes: list, outputs: list[str]) -> dict[str, np.ndarray]:
    """The values of ``outputs`` computed by the constant ``nodes`` from the initializers."""
    from onnx.reference import ReferenceEvaluator

    graph = model.graph
    sub = onnx.helper.make_graph(nodes, "constants", [], [onnx.helper.make_empty_tensor_value_info(o) for o in outputs],
                                 initializer=list(graph.initializer))
    evaluator = ReferenceEvaluator(onnx.helper.make_model(sub, opset_imports=list(model.opset_import)))
    return dict(zip(outputs, evaluator.run(None, {})))


def _spec(vi: onnx.ValueInfoProto) -> dict:
    tt = vi.type.tensor_type
    shape = [d.dim_value if d.WhichOneof("value") == "dim_value" else (d.dim_param or None) for d in tt.shape.dim]
    return {"name": vi.name, "shape": shape,
            "dtype": str(np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)))}


def _save(model: onnx.ModelProto, path: Path) -> None:
    """Save a subgraph; one over protobuf's 2 GiB keeps its weights in a file beside it."""
    if model.ByteSize() < onnx.checker.MAXIMUM_PROTOBUF:
        onnx.save(model, path)
    else:
        onnx.save(model, path, save_as_external_data=True, location=f"{path.name}.data")
