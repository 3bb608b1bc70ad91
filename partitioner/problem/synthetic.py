"""Synthetic pick problems: random layered DAGs that look like partitioned TFLite models.

Costs are in microseconds: compute per unit from tens of µs to a few ms, transfers at about
1 GB/s plus a fixed 50 µs, conversions at 2 ns per element. Each unit runs on CPU/FLOAT and, with
some probability, on other (device, type) pairs with a device- and type-dependent speed-up and
log-normal noise (so an accelerator is sometimes slower). Each unit reads one or two tensors of
the previous layer, sometimes a skip edge from further back; tensors often feed several units.
Everything is drawn from ``numpy.random.default_rng(seed)``: same seed, same problem.
"""

from __future__ import annotations

import numpy as np

from tacopt.partitioner.problem import Choice, Link, PickProblem, TensorEdge, Unit

_TRANSFER_1GBPS = Link(per_byte=0.001, fixed=50.0)  # µs: 1 GB/s plus 50 µs per transfer
_DEVICE_SPEEDUP = {"CPU": 1.0, "GPU": 4.0, "NPU": 8.0}
_TYPE_SPEEDUP = {"FLOAT": 1.0, "HYBRID": 1.5, "QUANTIZED_INT8": 2.5, "QUANTIZED_UINT8": 2.5}


def layered_dag_problem(
    n_units: int,
    *,
    seed: int,
    devices: tuple[str, ...] = ("CPU", "GPU", "NPU"),
    types: tuple[str, ...] = ("FLOAT", "QUANTIZED_INT8"),
    max_width: int = 8,
    choice_prob: float = 0.5,
    skip_prob: float = 0.15,
    two_input_prob: float = 0.35,
    boundaries: bool = True,
    transfer: Link = _TRANSFER_1GBPS,
    quant_per_element: float = 0.002,
) -> PickProblem:
    """A random layered-DAG pick problem with ``n_units`` units.

    Parameters
    ----------
    n_units : int
        Number of units (``func_0`` ... in topological order).
    seed : int
        Seed of the random generator; the problem is a pure function of the arguments.
    devices, types : tuple of str
        The (device, type) grid; ``devices[0]``/``types[0]`` (CPU/FLOAT) is always available,
        every other pair with probability ``choice_prob``.
    max_width : int
        Layers have 1 to ``max_width`` units.
    skip_prob : float
        Probability that an input comes from 2 to 6 layers back instead of the previous one.
    two_input_prob : float
        Probability that a unit reads two tensors instead of one.
    boundaries, transfer, quant_per_element
        Copied into the problem.

    Returns
    -------
    PickProblem

    Examples
    --------
    >>> p = layered_dag_problem(20, seed=1)
    >>> len(p.units), p.units[0].choices[0].label
    (20, 'CPU/FLOAT')
    >>> layered_dag_problem(20, seed=1) == p
    True
    """
    rng = np.random.default_rng(seed)
    pairs = [(d, t) for d in devices for t in types]
    layer_of: list[int] = []
    while len(layer_of) < n_units:
        layer = layer_of[-1] + 1 if layer_of else 0
        layer_of.extend([layer] * int(rng.integers(1, max_width + 1)))
    layer_of = layer_of[:n_units]
    members: dict[int, list[int]] = {}
    for u, layer in enumerate(layer_of):
        members.setdefault(layer, []).append(u)

    units = []
    for u in range(n_units):
        base_us = float(np.exp(rng.uniform(np.log(20.0), np.log(5000.0))))
        available = [pairs[0]] + [p for p in pairs[1:] if rng.random() < choice_prob]
        choices = tuple(Choice(d, t, _cost(base_us, d, t, rng)) for d, t in available)
        units.append(Unit(f"func_{u}", choices, int(rng.integers(len(choices)))))

    consumers: list[list[str]] = [[] for _ in range(n_units)]
    graph_input_readers: list[str] = []
    for u in range(n_units):
        layer = layer_of[u]
        if layer == 0:
            graph_input_readers.append(f"func_{u}")
            continue
        n_inputs = 2 if rng.random() < two_input_prob else 1
        picked: set[int] = set()
        for _ in range(n_inputs):
            back = int(rng.integers(2, 7)) if rng.random() < skip_prob else 1
            source_layer = max(0, layer - back)
            picked.add(int(rng.choice(members[source_layer])))
        for p in sorted(picked):
            consumers[p].append(f"func_{u}")

    tensors = [TensorEdge("input", None, tuple(graph_input_readers), (1, 224, 224, 3), "float32")]
    for u in range(n_units):
        elements = int(np.exp(rng.uniform(np.log(1e3), np.log(1e6))))
        last_layer = layer_of[u] == layer_of[-1]
        tensors.append(
            TensorEdge(
                f"t{u}",
                f"func_{u}",
                tuple(consumers[u]),
                (elements,),
                "float32",
                output=not consumers[u] or last_layer,
            )
        )
    return PickProblem(tuple(units), tuple(tensors), transfer, quant_per_element, "CPU", boundaries)


def two_choice_problem(n_units: int, seed: int) -> PickProblem:
    """A layered-DAG problem whose units choose between CPU/FLOAT and GPU/FLOAT only.

    The shape of problem the ``mincut`` picker solves exactly.

    Examples
    --------
    >>> p = two_choice_problem(30, seed=0)
    >>> sorted({c.label for u in p.units for c in u.choices})
    ['CPU/FLOAT', 'GPU/FLOAT']
    """
    return layered_dag_problem(
        n_units, seed=seed, devices=("CPU", "GPU"), types=("FLOAT",), choice_prob=0.8
    )


def _cost(base_us: float, device: str, inference_type: str, rng: np.random.Generator) -> float:
    speedup = _DEVICE_SPEEDUP.get(device, 3.0) * _TYPE_SPEEDUP.get(inference_type, 1.0)
    noise = 1.0 if (device, inference_type) == ("CPU", "FLOAT") else rng.lognormal(0.0, 0.6)
    return round(base_us / speedup * noise, 3)
