"""The live fleet console (`inferplane serve`, /console/) at fleet scale, in headless Chromium.

Run: python bench/console_bench.py [CLUSTERS]   (default 1,000 clusters, 100 ModelDeployments)
A synthetic fleet is applied to a fresh state (not timed), `inferplane serve` serves it, and Chromium
opens the console's link (over the DevTools pipe, as tests/apiserver/test_console.py drives it). Printed:
- first paint: the page's first-contentful-paint (performance timeline), from navigation start, of the
  page served (the console's first view is made before, at the first visit, and timed separately);
- a re-apply of the whole fleet by `inferplane apply` (every cluster and deployment written again, each
  with a new label, and one cluster more): when the new cluster's row appears on the open page, from
  the apply's start and from its end, and how many animation frames applied changes meanwhile (the
  changes are coalesced: not one repaint per object).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "apiserver"))

from browser import Browser  # noqa: E402
from served import INFERPLANE, start  # noqa: E402


def relabelled(folder: Path, out: Path, extra: str) -> int:
    """The fleet's manifests with a label on every object, and one cluster more (named `extra`)."""
    out.mkdir()
    count = 0
    for manifest in sorted(folder.glob("*.yaml")):
        docs = [d for d in yaml.safe_load_all(manifest.read_text()) if d]
        for doc in docs:
            doc["metadata"].setdefault("labels", {})["bench"] = "reapplied"
        clusters = [d for d in docs if d["kind"] == "InferenceCluster"]
        if clusters and not (out / "extra.yaml").exists():
            copy = yaml.safe_load(yaml.safe_dump(clusters[0]))
            copy["metadata"]["name"] = extra
            (out / "extra.yaml").write_text(yaml.safe_dump(copy))
        count += len(docs)
        (out / manifest.name).write_text(yaml.safe_dump_all(docs))
    return count + 1


def main(size: int) -> None:
    from inferplane.simulator.synthetic_fleet import write_fleet

    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        manifests = write_fleet(tmp / "fleet", size, models=True)
        state = tmp / "state"
        subprocess.run([*INFERPLANE, "apply", "-f", str(manifests), "--state", str(state)], check=True,
                       capture_output=True)
        server = start(state, tmp / "home")
        browser = Browser(tmp / "profile")
        try:
            deadline = time.monotonic() + 30
            while not (links := [l.strip() for l in (tmp / "home" / "serve.out").read_text().splitlines()
                                 if "/console/?token=" in l]):
                assert time.monotonic() < deadline
                time.sleep(0.05)
            started = time.perf_counter()
            browser.open(links[0])
            browser.wait_for("window.inferplaneConsole && document.getElementById('live').dataset.state === 'live'", 120)
            first_visit = time.perf_counter() - started
            rows = browser.evaluate("document.querySelectorAll('#cluster-table tr[id]').length")
            # Again, with the console's view made: what a page costs.
            browser.open(server.url + "/console/")
            browser.wait_for("window.inferplaneConsole && document.getElementById('live').dataset.state === 'live'", 120)
            paint = browser.evaluate("performance.getEntriesByName('first-contentful-paint')[0].startTime")
            html = browser.evaluate("document.documentElement.outerHTML.length")
            print(f"console at {rows:,} clusters: first paint {paint / 1000:.2f} s (first visit, the console's first "
                  f"view made then: live in {first_visit:.2f} s); page {html / 1024:.0f} KiB", flush=True)

            count = relabelled(manifests, tmp / "reapply", "zz-bench-new")
            frames = browser.evaluate("inferplaneConsole.frames")
            changes = browser.evaluate("inferplaneConsole.changes")
            began = time.perf_counter()
            subprocess.run([*INFERPLANE, "apply", "-f", str(tmp / "reapply"), "--state", str(state)], check=True,
                           capture_output=True)
            ended = time.perf_counter()
            browser.wait_for("!!document.getElementById('c-zz-bench-new')", 300, poll=0.02)
            shown = time.perf_counter()
            browser.wait_for("document.querySelector('tr[id=c-zz-bench-new] td:nth-child(3)').textContent === 'True'",
                             300, poll=0.1)
            ready = time.perf_counter()
            time.sleep(3)  # the quiet read after the burst
            frames = browser.evaluate("inferplaneConsole.frames") - frames
            changes = browser.evaluate("inferplaneConsole.changes") - changes
            print(f"re-apply of {count:,} objects (inferplane apply, {ended - began:.2f} s): the new cluster's row on "
                  f"the page {shown - began:.2f} s after the apply began ({shown - ended:+.2f} s after it ended), "
                  f"Ready {ready - began:.2f} s after; {changes} changes received, applied in {frames} frames",
                  flush=True)
        finally:
            browser.close()
            server.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if sys.argv[1:] else 1000)
