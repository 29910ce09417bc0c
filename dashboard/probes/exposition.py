"""Prometheus text exposition (format 0.0.4) of many series that share their labels.

prometheus_client's ``generate_latest`` writes each sample through a label dict: name
checks, sorting and escaping of every label of every sample, so a scrape of 100,000
queues (1,000,000 samples) spent CPU-seconds in it (bench/RESULTS.md, "Figures behind the
code"). A queue's labels are the same in each of its series: here they are escaped once
per queue, and values are formatted as prometheus_client formats them
(``floatToGoString``, memoised: counts repeat). The output is byte for byte what
``generate_latest`` writes for the same families (tests/console/metrics/test_metrics_exposition.py
compares them), so Prometheus reads it the same way.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache
from operator import attrgetter
from typing import Any, Literal, NamedTuple

from prometheus_client.utils import floatToGoString


class Family(NamedTuple):
    name: str
    doc: str
    type: Literal["gauge", "counter"]
    field: str  # the attribute of a row that is this family's value


def escape(value: str) -> str:
    """A label value as the text format escapes it (prometheus_client's rule)."""
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def labels(**values: str) -> str:
    """A series' label set as written between braces: sorted by name, values escaped."""
    return ",".join(f'{name}="{escape(value)}"' for name, value in sorted(values.items()))


number = lru_cache(maxsize=1 << 16)(floatToGoString)


def _help(name: str, doc: str, type_: str) -> str:
    doc = doc.replace("\\", r"\\").replace("\n", r"\n")
    return f"# HELP {name} {doc}\n# TYPE {name} {type_}\n"


def render(families: Sequence[Family], rows: Sequence[Any]) -> Iterator[str]:
    """The families' HELP, TYPE and one sample per row each, a family at a time (a
    response can stream them: a family of 100,000 queues is megabytes of text); a counter's
    ``_created`` gauge follows it, as ``generate_latest`` writes it. Families with no row
    are written with their HELP and TYPE only (as prometheus_client does)."""
    for family in families:
        value = attrgetter(family.field)
        if family.type == "counter":
            name = f"{family.name}_total"
            yield _help(name, family.doc, "counter") + "".join(
                [f"{name}{{{r.labels}}} {number(value(r))}\n" for r in rows]
            )
            if rows:
                created = f"{family.name}_created"
                yield _help(created, family.doc, "gauge") + "".join(
                    [f"{created}{{{r.labels}}} {number(r.created)}\n" for r in rows]
                )
        else:
            yield _help(family.name, family.doc, "gauge") + "".join(
                [f"{family.name}{{{r.labels}}} {number(value(r))}\n" for r in rows]
            )
