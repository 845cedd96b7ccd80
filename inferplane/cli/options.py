"""The options and arguments several commands share: --state, -f, -R, -n, --timeout, the stream limits and
KIND NAME with their shell completion."""

from __future__ import annotations

import re
from pathlib import Path

import click

from inferplane import DOCUMENTS_ENV, DOCUMENTS_FLAG, MAX_DOCUMENTS, MAX_STREAM_BYTES, STREAM_BYTES_ENV, \
    STREAM_BYTES_FLAG

STATE_OPTION = click.option(
    "--state", type=click.Path(path_type=Path), default=None,
    help="State folder (default: $INFERPLANE_STATE, else ./.inferplane).")
# readable=False: a path this user may not read is reported by admission with the others it cannot
# read (exit 1), not refused alone by click as a usage error (exit 2).
FILES_OPTION = click.option("-f", "--filename", "paths", multiple=True, required=True,
                            type=click.Path(path_type=Path, readable=False),
                            help="A manifest file, a folder of them, or - for standard input (repeatable).")
# kubectl's -R/--recursive (cli-runtime's FilenameOptions.Recursive, default false) reads a folder's
# subfolders only when given. inferplane has read them always (the main job, scripts/run, validates every
# recipe with `-f recipes`), so reading them stays the default; -R is accepted as kubectl users type it,
# and --no-recursive reads only the folder's own files, as kubectl without -R. (kubectl's spelling
# `--recursive=false` is not offered: an option with an optional value would take `render -R DIR`'s DIR.)
RECURSIVE_OPTION = click.option(
    "-R", "--recursive/--no-recursive", default=True,
    help="Read a -f folder's subfolders too (the default; -R as kubectl's); --no-recursive reads only the "
         "folder's own files, as kubectl without -R.")
NAMESPACE_OPTION = click.option("-n", "--namespace", default=None,
                                help="Namespace of a namespaced kind (default: default).")
TIMEOUT_OPTION = click.option(
    "--timeout", type=click.FloatRange(min=0), default=300.0, show_default=True,
    help="Seconds to wait for another inferplane command working on the same state.")


class ByteSize(click.ParamType):
    """A number of bytes, plain or with a binary suffix: 67108864, 64Mi, 1Gi."""

    name = "BYTES"
    _SCALES = {"": 1, "Ki": 1024, "Mi": 1024 ** 2, "Gi": 1024 ** 3}

    def convert(self, value, param, ctx) -> int:
        if isinstance(value, int):
            return value
        match = re.fullmatch(r"\s*(\d+)\s*([KMG]i)?\s*", str(value))
        if match is None or int(match.group(1)) == 0:
            self.fail(f"{value!r} is not a size: write a number of bytes, or one with Ki, Mi or Gi, e.g. 128Mi",
                      param, ctx)
        return int(match.group(1)) * self._SCALES[match.group(2) or ""]


def stream_limits(command):
    """--max-file-bytes and --max-documents (or their environment variables): how large a file, or
    standard input, of manifests may be."""
    command = click.option(
        STREAM_BYTES_FLAG, "max_bytes", type=ByteSize(), default=MAX_STREAM_BYTES, envvar=STREAM_BYTES_ENV,
        show_envvar=True, help=f"Refuse a manifest file, or standard input, larger than this (default "
                               f"{MAX_STREAM_BYTES // 1024 ** 2}Mi).")(command)
    return click.option(
        DOCUMENTS_FLAG, "max_documents", type=click.IntRange(min=1), default=MAX_DOCUMENTS, envvar=DOCUMENTS_ENV,
        show_envvar=True, help=f"Refuse a manifest file, or standard input, of more documents than this, a List's "
                               f"items counting one each (default {MAX_DOCUMENTS:,}).")(command)


def limits(max_bytes: int, max_documents: int):
    """The stream limits the options above gave, as admission takes them."""
    from inferplane.admission.limits import StreamLimits

    return StreamLimits(max_bytes, max_documents)


def complete_kind(ctx, param, incomplete: str):
    from inferplane.cli.completion import complete_kinds

    return complete_kinds(incomplete)


def complete_name(ctx, param, incomplete: str):
    from inferplane.cli.completion import complete_names

    return complete_names(ctx.params, incomplete)


def object_arguments(command):
    """KIND NAME [-n NAMESPACE] [--state DIR]: how every single-object command names its object."""
    for decorator in reversed((click.argument("kind", shell_complete=complete_kind),
                               click.argument("name", shell_complete=complete_name), NAMESPACE_OPTION,
                               STATE_OPTION)):
        command = decorator(command)
    return command
