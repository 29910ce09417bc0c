"""Templates never show their own comments: Django's {# #} ends at the end of its line."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

TEMPLATES = Path(__file__).resolve().parents[3] / "templates"


@pytest.mark.parametrize("path", sorted(TEMPLATES.rglob("*.html")), ids=lambda p: p.name)
def test_every_one_line_comment_closes_on_its_line(path: Path) -> None:
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if "{#" in line:
            assert "#}" in line[line.index("{#") :], f"{path.name}:{number}: use {{% comment %}}"


@pytest.mark.django_db
def test_the_login_page_shows_no_template_syntax(client: Client) -> None:
    html = client.get("/login/").content.decode()
    assert "{#" not in html and "#}" not in html
