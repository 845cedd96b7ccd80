"""`inferplane function serve`: the composition functions over Crossplane's RunFunction gRPC protocol."""

from __future__ import annotations

import click


class _FunctionGroup(click.Group):
    """`function serve` takes the function SDK's own flags; building them imports gRPC, so only when
    this group is used (not for `inferplane --help`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return ["serve"]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name != "serve":
            return None
        return _serve_command()


def _serve_command() -> click.Command:
    from crossplane.function import cli as sdk_cli

    from inferplane.crossplane.function import CACHE_BYTES
    from inferplane.kept import MIB

    @click.command()
    @sdk_cli.standard_options
    @click.option("--cache-size", type=click.IntRange(min=0), default=CACHE_BYTES // MIB, show_default=True,
                  envvar="CACHE_SIZE", metavar="MB",
                  help="Most the server keeps of what it worked out (answers to requests seen again, decoded "
                       "resources, serialised parts), keys and values together, in MB; the least recently used "
                       "go first. 0 keeps nothing.")
    def serve(cache_size: int, **options) -> None:
        """Serve every composition function over Crossplane's RunFunction gRPC protocol (v1).

        Logs are JSON lines (--debug: human-readable, one line per call). Listens on --address with
        mTLS from --tls-server-certs-dir (tls.crt, tls.key, ca.crt), or --insecure for local use.
        """
        from inferplane.crossplane.function import FunctionRunner, serve

        if not options["insecure"] and not options["tls_certs_dir"]:
            raise click.UsageError("pass --tls-server-certs-dir DIR (tls.crt, tls.key, ca.crt), or --insecure "
                                   "for local use")
        serve(FunctionRunner(cache_bytes=cache_size * MIB), **options)

    return serve


@click.group(cls=_FunctionGroup)
def function() -> None:
    """Run the composition functions for Crossplane (the RunFunction gRPC server)."""
