"""`inferplane serve`: the Kubernetes API over the state, on loopback, for kubectl and client libraries."""

from __future__ import annotations

import signal
from pathlib import Path

import click

from inferplane.cli.options import STATE_OPTION

# kube-apiserver's secure port (k8s.io/apiserver pkg/server/options/serving.go, v0.37.0: BindPort 6443);
# on loopback unless --address says otherwise.
DEFAULT_ADDRESS = "127.0.0.1:6443"
# Where the kubeconfig goes unless --kubeconfig-out says otherwise: inside the state folder.
KUBECONFIG_NAME = "kubeconfig"


def parse_address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit() or int(port) > 65535:
        raise click.BadParameter(f"{text!r}: write HOST:PORT, e.g. 127.0.0.1:6443 (port 0: any free port)",
                                 param_hint="'--address'")
    return host, int(port)


def stop_on(*signals: signal.Signals) -> None:
    """Stop the server, as Ctrl-C does, on these signals: `kill` (SIGTERM) too, and SIGINT even where the
    shell that started the server in the background had it ignored (a script's `serve &`)."""
    def stop(signum, frame):
        raise KeyboardInterrupt
    for number in signals:
        signal.signal(number, stop)


def catalog():
    """What the API serves: the CLI's resource types (those the control plane stores), printed with
    `inferplane get`'s columns."""
    from inferplane.apiserver.catalog import Catalog, Served
    from inferplane.cli.output import cell
    from inferplane.cli.resources import resource_types
    from inferplane.cli.views import columns_of, event_columns

    def columns(kind: str, api_version: str, wide: bool):
        found = event_columns() if (kind, api_version) == ("Event", "v1") else columns_of(kind, wide, api_version)
        return [(header, lambda obj, show=show: cell(show(obj))) for header, show in found]

    types = tuple(Served(t.kind, t.api_version, t.plural, t.namespaced, t.short_names)
                  for t in resource_types() if not t.in_cluster)
    return Catalog(types, columns)


def events(store):
    """The store's events as v1 Events, each naming its object's uid (kubectl describe selects by it)."""
    from inferplane.cli.views import event_objects
    from inferplane.runtime.store import Key

    out = event_objects(store.event_log.events())
    for event in out:
        subject = event["involvedObject"]
        group = subject["apiVersion"]  # event_objects names the object's group there
        found = store.get(Key(group, subject["kind"], subject.get("namespace", ""), subject["name"]))
        if found is not None:
            subject["uid"] = found["metadata"].get("uid")
    return out


def console(app):
    """The fleet console (/console/): the fleet page, rendered by the CLI's code, kept live by the server."""
    from inferplane.apiserver.console import Console
    from inferplane.cli.console_view import ConsoleView, script
    from inferplane.engine.control_plane import ControlPlane

    return Console(ConsoleView(), script(), lambda: ControlPlane(app.state, wait=60.0).store, app.hub,
                   lambda: app.address)


@click.command()
@click.option("--address", default=DEFAULT_ADDRESS, show_default=True,
              help="HOST:PORT to listen on (port 0: any free port). Loopback unless you say otherwise.")
@click.option("--kubeconfig-out", type=click.Path(path_type=Path), default=None,
              help="Where to write the kubeconfig (mode 0600; default: STATE/kubeconfig).")
@click.option("--max-watches", type=click.IntRange(min=1), default=None,
              help="Watches open at once with the token; the next is answered 429 (default 250).")
@click.option("--console-url", is_flag=True,
              help="Print a new one-time login link to the fleet console of the server already serving the "
                   "state (read from its kubeconfig), and exit.")
@STATE_OPTION
def serve(address: str, kubeconfig_out: Path | None, state: Path | None, max_watches: int | None,
          console_url: bool) -> None:
    """Serve the Kubernetes API over the state: kubectl, client libraries and tools read and write it.

    TLS with a certificate made at start, a bearer token on every request; the kubeconfig written
    carries both. Writes go through the same admission as `inferplane apply`, and the server
    reconciles the fleet after each one (holding the state's lease, as apply does)."""
    from inferplane.apiserver.app import App
    from inferplane.apiserver.credentials import make_credentials, write_kubeconfig
    from inferplane.apiserver.server import APIHTTPServer
    from inferplane.cli.state import opened

    host, port = parse_address(address)
    if console_url:
        from inferplane.cli.console_link import print_console_url
        print_console_url(state, kubeconfig_out)
        return
    with opened(state) as runtime:  # creates the state where there is none; refuses one it cannot use
        folder = runtime.store.path
    credentials = make_credentials(host)
    app = App(folder, catalog(), events, max_watches=max_watches)
    app.console = console(app)
    try:
        server = APIHTTPServer((host, port), app, credentials)
    except OSError as error:
        raise click.ClickException(f"cannot listen on {address}: {error.strerror}: pass --address HOST:PORT "
                                   "with a free port (port 0 picks one)") from None
    app.address = server.url.removeprefix("https://")
    config = kubeconfig_out or folder / KUBECONFIG_NAME
    write_kubeconfig(config, server.url, credentials)
    app.start()
    click.echo(f"Serving the Kubernetes API of {folder} at {server.url}\n"
               f"kubeconfig (mode 0600, with the token): {config}\n"
               f"  export KUBECONFIG={config}\n  kubectl get inferenceclusters\n"
               f"The fleet console (a one-time login link; `inferplane serve --console-url` prints another):\n"
               f"  {app.console.login_url()}", err=False)
    stop_on(signal.SIGINT, signal.SIGTERM)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        app.stop()
