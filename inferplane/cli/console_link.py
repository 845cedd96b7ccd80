"""`inferplane serve --console-url`: a new one-time login link to the fleet console, asked of the server
already serving the state, with the kubeconfig it wrote (its address, its authority, its token)."""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path

import click
import yaml

from inferplane import state_dir

KUBECONFIG_NAME = "kubeconfig"


def print_console_url(state: Path | None, kubeconfig: Path | None) -> None:
    config_path = kubeconfig or state_dir(state) / KUBECONFIG_NAME
    try:
        config = yaml.safe_load(config_path.read_text())
        cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
        server, token = cluster["server"], user["token"]
        authority = base64.b64decode(cluster["certificate-authority-data"]).decode()
    except (OSError, yaml.YAMLError, KeyError, IndexError, TypeError, ValueError) as error:
        raise click.ClickException(f"cannot read the server's kubeconfig {config_path} ({error}): start "
                                   "`inferplane serve` with this --state first (or pass its --kubeconfig-out)") from None
    context = ssl.create_default_context(cadata=authority)
    request = urllib.request.Request(f"{server}/console/login", method="POST", data=b"",
                                     headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as answer:
            url = json.loads(answer.read())["url"]
    except (urllib.error.URLError, OSError, ValueError, KeyError) as error:
        raise click.ClickException(f"the server at {server} gave no console link ({error}): is "
                                   "`inferplane serve` running with this --state?") from None
    click.echo(url)
