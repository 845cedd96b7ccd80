"""The README and the pages under docs/ (and bench/RESULTS.md): every relative link points at a file that
exists (and, into a Markdown page, at a heading it has); the README stays a five-minute read that states
the two set-up commands CI and a newcomer run."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "bench" / "RESULTS.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def without_code(text: str) -> str:
    """The text outside fenced and indented code blocks and code spans, where a link is a link."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    text = "\n".join(line for line in text.splitlines() if not line.startswith("    "))
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    out = set()
    for line in page.read_text().splitlines():
        match = re.match(r"#{1,6} (.+)", line)
        if match:
            title = re.sub(r"[`*]", "", match.group(1).strip().lower())
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


def test_every_relative_link_points_at_an_existing_file_and_heading():
    broken = []
    for page in PAGES:
        for target in LINK.findall(without_code(page.read_text())):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...: not ours to check
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}: no such file")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                broken.append(f"{page.relative_to(ROOT)}: {target}: no such heading")
            elif not str(resolved).startswith(str(ROOT)):
                broken.append(f"{page.relative_to(ROOT)}: {target}: outside the repository")
    assert broken == []


def test_the_pages_link_to_each_other():
    readme = (ROOT / "README.md").read_text()
    for page in PAGES[1:]:
        assert f"]({page.relative_to(ROOT)})" in readme, f"README.md does not link to {page.relative_to(ROOT)}"


def test_the_readme_is_short_and_states_the_set_up_commands():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    assert "\n    bash scripts/run\n" in readme and "\n    bash scripts/test\n" in readme
    assert "bash scripts/test" in (ROOT / ".ci" / "run").read_text()
    assert "](docs/fleet-page.png)" in readme
