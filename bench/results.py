"""bench/RESULTS.md: one `## ` section per benchmark, each replaced by its own script."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")
TITLE = "# Benchmark results\n\nEach section is written by the script it names (`--write`).\n"


def record(heading: str, body: str) -> None:
    """Replace (or add) the section ``## heading`` with ``body``."""
    text = RESULTS.read_text() if RESULTS.exists() else TITLE
    if not text.startswith("# Benchmark results"):
        text = TITLE
    section = f"## {heading}\n\n{body.strip()}\n"
    start = text.find(f"## {heading}\n")
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section
    else:
        end = text.find("\n## ", start + 1)
        text = text[:start] + section + (text[end:] if end >= 0 else "")
    RESULTS.write_text(text)


def publish(report: str, write: bool) -> None:
    """Print a report (its first line a ``## heading``) and, with ``write``, record it."""
    print(report)
    if write:
        heading, _, body = report.partition("\n")
        record(heading.removeprefix("## "), body)
