"""Long work shows itself: on a terminal a bar that ends at 100% on its own line, elsewhere a plain
line every few seconds, and every apply ends with one line saying what it did and what is not ready."""

import itertools
import re
from pathlib import Path

from click.testing import CliRunner

from inferplane.cli.main import cli
from inferplane.cli.progress import NAMED_NOT_READY, PLAIN_EVERY_SECONDS, REDRAW_EVERY, Progress, apply_summary

MIXED = Path(__file__).resolve().parents[2] / "recipes" / "mixed-fleet"


class Screen:
    """What a person watching standard error sees, written as Progress writes it."""

    def __init__(self):
        self.text = ""

    def echo(self, text, newline):
        self.text += text + ("\n" if newline else "")

    def lines(self):
        """Each line as it stays on screen: a carriage return redraws the line it is on."""
        return [line.rsplit("\r", 1)[-1] for line in self.text.split("\n")]


def test_on_a_terminal_the_bar_ends_at_100_percent_on_its_own_line():
    screen = Screen()
    progress = Progress(screen.echo, terminal=True)
    left = itertools.count(60, -1)
    for done in range(1, 61):
        progress(done, lambda: next(left))  # the queue empties as the run goes (its last item leaves 0)
    progress.finish()
    screen.echo("applied in 1.0 s: ...", True)  # what the command prints next
    assert screen.lines()[-3:] == [
        f"reconciling [{'#' * 30}] 60 done, 0 queued   ", "applied in 1.0 s: ...", ""]
    assert screen.text.count("\r") == 60 // REDRAW_EVERY + 1, "redrawn every few items, not every one"


def test_a_run_that_drew_no_bar_leaves_nothing_on_screen():
    screen = Screen()
    progress = Progress(screen.echo, terminal=True)
    progress(3, lambda: 0)
    progress.finish()
    assert screen.text == ""


def test_without_a_terminal_a_plain_line_every_few_seconds():
    screen = Screen()
    now = iter(float(second) for second in itertools.count())  # each reading a second later
    progress = Progress(screen.echo, terminal=False, clock=lambda: next(now))
    for done in range(1, 13):
        progress(done, lambda: 100 - done)
    progress.finish()
    lines = [line for line in screen.text.split("\n") if line]
    assert "\r" not in screen.text
    assert len(lines) == 12 // int(PLAIN_EVERY_SECONDS)
    assert all(re.fullmatch(r"reconciling: \d+ done, \d+ queued", line) for line in lines)


def test_the_summary_names_what_is_not_ready_and_counts_the_rest():
    not_ready = [(f"InferenceCluster/c{i}", "Creating") for i in range(NAMED_NOT_READY + 2)]
    line = apply_summary(2.25, ["created", "configured", "unchanged"], 1, not_ready)
    assert line == ("applied in 2.2 s: 2 changed (1 created, 1 configured), 1 unchanged, 1 refused; 7 not ready: "
                    + ", ".join(f"InferenceCluster/c{i} (Creating)" for i in range(NAMED_NOT_READY))
                    + " and 2 more")


def test_every_apply_ends_with_its_summary_naming_what_is_not_ready(tmp_path):
    state = tmp_path / "state"
    first = CliRunner().invoke(cli, ["apply", "-f", str(MIXED), "--state", str(state)])
    assert first.exit_code == 0, first.stderr
    # The fleet's one refused cluster (the README's eks-amd) is named with its reason.
    assert re.fullmatch(r"applied in \d+\.\d s: 20 changed \(20 created\), 0 unchanged; 1 not ready: "
                        r"InferenceCluster/eks-amd \(UnsupportedDevices\)", first.stderr.splitlines()[-1])
    again = CliRunner().invoke(cli, ["apply", "-f", str(MIXED), "--state", str(state)])
    assert re.fullmatch(r"applied in \d+\.\d s: 0 changed, 20 unchanged; 1 not ready: "
                        r"InferenceCluster/eks-amd \(UnsupportedDevices\)", again.stderr.splitlines()[-1])
