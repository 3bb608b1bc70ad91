"""Composite operations and the fusion registry.

A **composite** is a set of primitive ops with a declared interface: an ``implements`` name,
attributes, ordered inputs and outputs (TensorFlow's ``tf.function(experimental_implements=...)``).
Composites are recorded on a graph as ``G.graph["composites"]``, a tuple of
:class:`~tacopt.fusion.ir.records.Composite` (an IR record).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from flatbuffers import flexbuffers

from tacopt.errors import FusionError
from tacopt.fusion.ir import Composite, Op
from tacopt.fusion.rules.base import Editor, Rewrite, op_name
from tacopt.registry import Registry

# --------------------------------------------------------------------------------------------
# the fusion registry
# --------------------------------------------------------------------------------------------

#: ``verify_signature(editor, composite)`` returns why the composite does not fit (or None).
VerifySignature = Callable[["Editor", Composite], "str | None"]
#: ``rewrite(editor, composite)`` proposes the ops (and new constants) replacing the region.
RewriteFn = Callable[["Editor", Composite], "Rewrite"]


@dataclass(frozen=True, slots=True)
class Fusion:
    """A registered fusion: a signature check and a rewrite, by ``implements`` name."""

    name: str
    verify_signature: VerifySignature
    rewrite: RewriteFn


_FUSIONS: Registry[Fusion] = Registry("fusion", FusionError)


def register_fusion(
    name: str, verify_signature: VerifySignature, rewrite: RewriteFn, *, replace: bool = False
) -> Fusion:
    """Register the fusion of composites implementing ``name``.

    Parameters
    ----------
    name : str
        The composite's ``implements`` name (or a STABLEHLO_COMPOSITE op's ``name``).
    verify_signature : callable
        ``(editor, composite) -> str | None``: why the composite does not fit (arity, ranks,
        dtypes, attribute values), or None when it does.
    rewrite : callable
        ``(editor, composite) -> Rewrite``: the ops replacing the region's ops; they must
        produce the composite's outputs.
    replace : bool
        Replace a fusion of the same name (re-running a notebook cell) instead of raising.

    Raises
    ------
    FusionError
        If ``name`` is already registered.

    Examples
    --------
    >>> f = register_fusion("doc_example", lambda ed, c: None, lambda ed, c: None)
    >>> get_fusion("doc_example") is f
    True
    >>> unregister_fusion("doc_example")
    """
    return _FUSIONS.add(name, Fusion(name, verify_signature, rewrite), replace=replace)


def unregister_fusion(name: str) -> None:
    """Remove a registered fusion (tests and plugins that re-register)."""
    _FUSIONS.remove(name)


def get_fusion(name: str) -> Fusion:
    """The fusion registered for ``name``; raises :class:`FusionError` listing the known ones."""
    return _FUSIONS.get(name)


def known_fusions() -> list[str]:
    """Names of the registered fusions, sorted."""
    return list(_FUSIONS.names())


# --------------------------------------------------------------------------------------------
# the composite pass
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CompositeOutcome:
    """What the composite pass did: fusions by name, warnings, and the composites left as is."""

    counts: dict[str, int]
    warnings: tuple[str, ...]
    unfused: tuple[Composite, ...]


def stablehlo_composites(ed: Editor) -> list[Composite]:
    """Each STABLEHLO_COMPOSITE op as a one-op composite (``implements`` = its name)."""
    out = []
    for op in ed.ordered_ops():
        if op.kind == "STABLEHLO_COMPOSITE":
            attrs = op.options.get("composite_attributes") or {}
            if isinstance(attrs, (bytes, bytearray)):
                attrs = flexbuffers.Loads(bytes(attrs)) if attrs else {}
            name = str(op.options.get("name", op.name))
            out.append(
                Composite(
                    name, dict(attrs), tuple(t for t in op.inputs if t), op.outputs, (op.name,)
                )
            )
    return out


def fuse_composites(
    ed: Editor, composites: Sequence[Composite], *, strict: bool
) -> CompositeOutcome:
    """Fuse every composite in ``ed`` (in place on the editor, which is the pass's own copy).

    A composite's registered fusion verifies its signature, then rewrites its region; with no
    registered fusion, ``tfl_fusable_op=True`` makes it one CUSTOM op named by its ``name``
    attribute (the other attributes as flexbuffer custom options). Anything else is kept and
    reported: a warning per composite, or a :class:`FusionError` when ``strict``.
    """
    counts: dict[str, int] = {}
    warnings: list[str] = []
    unfused: list[Composite] = []

    def refuse(c: Composite, why: str) -> None:
        msg = f"composite '{c.implements}' at op '{c.ops[0]}': {why}"
        if strict:
            raise FusionError(msg)
        warnings.append(msg)
        unfused.append(c)

    for c in composites:
        if not set(c.ops) <= ed.ops.keys():
            refuse(c, "its ops are no longer in the graph")
            continue
        fusion = _FUSIONS.find(c.implements)
        if fusion is not None:
            why = fusion.verify_signature(ed, c)
            if why:
                refuse(c, f"signature does not verify: {why}")
                continue
            rw = fusion.rewrite(ed, c)
            rw = Rewrite(c.ops, rw.ops, rw.tensors)
        elif c.attrs.get("tfl_fusable_op") is True:
            code = str(c.attrs.get("name", c.implements))
            opts = {k: v for k, v in sorted(c.attrs.items()) if k not in ("tfl_fusable_op", "name")}
            anchor = ed.ops[c.ops[-1]]
            new = Op(
                op_name(ed, f"custom_{code}", anchor),
                f"CUSTOM:{code}",
                c.inputs,
                c.outputs,
                {},
                custom_options=bytes(flexbuffers.Dumps(opts)),
            )
            rw = Rewrite(c.ops, (new,))
        else:
            if ed.ops[c.ops[0]].kind == "STABLEHLO_COMPOSITE":
                continue  # kept as one node; nothing to report
            known = ", ".join(known_fusions())
            refuse(c, f"no fusion registered and not tfl_fusable_op; known: {known}")
            continue
        if not ed.apply(rw):
            refuse(c, "an intermediate tensor of the region is read outside it")
            continue
        counts[c.implements] = counts.get(c.implements, 0) + 1
    return CompositeOutcome(counts, tuple(warnings), tuple(unfused))


# --------------------------------------------------------------------------------------------
# built-in fusions
# --------------------------------------------------------------------------------------------


def _verify_embedding_lookup(ed: Editor, c: Composite) -> str | None:
    if len(c.inputs) != 2 or len(c.outputs) != 1:
        return f"expected 2 inputs and 1 output, got {len(c.inputs)} and {len(c.outputs)}"
    ids = [t for t in c.inputs if ed.tensor(t).dtype in ("int32", "int64")]
    tables = [t for t in c.inputs if t not in ids]
    if len(ids) != 1 or len(tables) != 1:
        return "expected one integer ids input and one table"
    table, out = ed.tensor(tables[0]), ed.tensor(c.outputs[0])
    if len(table.shape) < 2:
        return f"table '{table.name}' has rank {len(table.shape)}, expected >= 2"
    want = (*ed.tensor(ids[0]).shape, *table.shape[1:])
    if tuple(out.shape) != want:
        return f"output shape {out.shape}, expected {want}"
    if c.attrs.get("max_norm") not in (None, 0, 0.0):
        return f"max_norm={c.attrs['max_norm']} is not supported by EMBEDDING_LOOKUP"
    return None


def _rewrite_embedding_lookup(ed: Editor, c: Composite) -> Rewrite:
    ids = next(t for t in c.inputs if ed.tensor(t).dtype in ("int32", "int64"))
    table = next(t for t in c.inputs if t != ids)
    anchor = ed.ops[c.ops[-1]]
    new = Op(op_name(ed, "EMBEDDING_LOOKUP", anchor), "EMBEDDING_LOOKUP", (ids, table), c.outputs)
    return Rewrite(c.ops, (new,))


register_fusion("embedding_lookup", _verify_embedding_lookup, _rewrite_embedding_lookup)
