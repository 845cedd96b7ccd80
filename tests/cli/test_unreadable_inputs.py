"""`-f` as a hostile user uses it: every entry of a folder that cannot be read is reported with its path,
all at once, exit 1, never a traceback; subfolders are read (-R accepted, --no-recursive as kubectl's default).

Permissions are real: the command runs as a process bound by file modes (the `unprivileged` fixture)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from inferplane.cli.main import cli

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "qwen2.5-0.5b-cpu"


def command(prefix: list[str], *args) -> subprocess.CompletedProcess:
    done = subprocess.run([*prefix, sys.executable, "-m", "inferplane", *map(str, args)], capture_output=True,
                          text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert "Traceback" not in done.stderr, done.stderr
    return done


def errors(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("error: ")]


def test_a_folder_this_user_may_not_search_is_one_error_naming_it_not_a_traceback(tmp_path, unprivileged):
    folder = tmp_path / "fleet"
    shutil.copytree(RECIPE, folder)
    folder.chmod(0o644)  # listed, but no file of it can be opened
    try:
        done = command(unprivileged, "validate", "-f", folder)
    finally:
        folder.chmod(0o755)
    assert done.returncode == 1
    assert errors(done) == [f"error: {folder}: the folder cannot be searched (no execute permission): its files "
                            "cannot be opened: let this user read it (chmod, or its owner), or run as a user who may"]


def test_every_entry_a_folder_cannot_read_is_reported_with_its_path_at_once(tmp_path, unprivileged):
    folder = tmp_path / "fleet"
    shutil.copytree(RECIPE, folder)
    (folder / "locked.yaml").write_bytes((RECIPE / "class.yaml").read_bytes())
    (folder / "locked.yaml").chmod(0)
    (folder / "dangling.yaml").symlink_to("gone.yaml")
    (folder / "loop.yaml").symlink_to("loop.yaml")
    (folder / "linked.yaml").symlink_to(tmp_path)
    os.mkfifo(folder / "pipe.yaml")  # read, it would block the command forever
    (folder / "notes").symlink_to("nowhere")  # not a manifest's name: not read, as kubectl skips it
    (folder / "sub").mkdir()
    (folder / "sub" / "closed").mkdir(mode=0)
    try:
        done = command(unprivileged, "validate", "--no-recursive", "-f", folder)
        recursive = command(unprivileged, "validate", "-f", folder)
    finally:
        (folder / "sub" / "closed").chmod(0o755)
    expected = [
        f"error: {folder / 'dangling.yaml'}: a symbolic link to gone.yaml, which does not exist: fix or remove the link",
        f"error: {folder / 'linked.yaml'}: a symbolic link to a folder, which is not followed: name the folder itself "
        "with -f",
        f"error: {folder / 'loop.yaml'}: a symbolic link in a loop (too many levels of symbolic links): fix or remove "
        "the link",
        f"error: {folder / 'pipe.yaml'}: not a regular file (a FIFO): a folder's manifests are read from regular "
        "files; name it with -f on its own to read it",
        f"error: {folder / 'locked.yaml'}: cannot read the file: permission denied: let this user read it (chmod, or "
        "its owner), or run as a user who may"]
    assert done.returncode == 1 and sorted(errors(done)) == sorted(expected)
    assert "5 valid, 5 errors" in done.stderr  # the recipe's readable files are still checked
    # Subfolders too (the default): one it may not list is named.
    assert recursive.returncode == 1 and sorted(errors(recursive)) == sorted(expected + [
        f"error: {folder / 'sub' / 'closed'}: the folder cannot be listed: permission denied: let this user read it "
        "(chmod, or its owner), or run as a user who may"])


def test_an_unreadable_path_named_with_f_exits_1_naming_it_as_apply_and_delete_do_too(tmp_path, unprivileged):
    locked = tmp_path / "class.yaml"
    locked.write_bytes((RECIPE / "class.yaml").read_bytes())
    locked.chmod(0)
    closed = tmp_path / "closed"
    closed.mkdir(mode=0)
    try:
        done = {verb: command(unprivileged, *verb.split(), "-f", locked, "-f", closed, "--state", tmp_path / "state")
                for verb in ("validate", "apply", "delete")}
    finally:
        closed.chmod(0o755)
    for verb, result in done.items():
        assert result.returncode == 1, (verb, result.stderr)
        assert errors(result)[:2] == [
            f"error: {locked}: cannot read the file: permission denied: let this user read it (chmod, or its owner), "
            "or run as a user who may",
            f"error: {closed}: the folder cannot be listed: permission denied: let this user read it (chmod, or its "
            "owner), or run as a user who may"], verb


def test_a_folder_is_read_with_its_subfolders_and_no_recursive_reads_its_own_files_as_kubectl(tmp_path):
    folder = tmp_path / "fleet"
    (folder / "models").mkdir(parents=True)
    shutil.copy(RECIPE / "class.yaml", folder)
    shutil.copy(RECIPE / "model.yaml", folder / "models")
    runner = CliRunner()
    for flags in ((), ("-R",), ("--recursive",)):
        deep = runner.invoke(cli, ["validate", *flags, "-f", str(folder)])
        assert deep.exit_code == 0 and str(folder / "models" / "model.yaml") in deep.output, deep.output
        assert "2 valid, 0 errors" in deep.output
    flat = runner.invoke(cli, ["validate", "--no-recursive", "-f", str(folder)])
    assert flat.exit_code == 0 and "model.yaml" not in flat.output and "1 valid, 0 errors" in flat.output
    # -R before a command's folder argument is a flag, not a value that takes the folder.
    rendered = runner.invoke(cli, ["render", "-R", str(RECIPE)])
    assert rendered.exit_code == 0, rendered.output
