"""A real headless Chromium (Debian's, installed by `scripts/setup test`) kept open and driven over the
DevTools protocol on a pipe (--remote-debugging-pipe: no port, no WebSocket library): open a URL,
evaluate JavaScript in the page, wait for a condition. Loopback only: the browser is told to fetch
nothing of its own (no updates, no first-run pages), and the server's certificate, made at its start,
is accepted as the test's own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any


class Browser:
    def __init__(self, profile: Path):
        chromium = shutil.which("chromium")
        assert chromium, "chromium is missing: `bash scripts/setup test` installs Debian's chromium package"
        commands_read, self.commands = os.pipe()
        self.replies, replies_write = os.pipe()

        def pipes():  # the DevTools pipe: the browser reads fd 3 and writes fd 4 (by way of fds no pipe holds)
            high_read, high_write = os.dup2(commands_read, 200), os.dup2(replies_write, 201)
            os.dup2(high_read, 3)
            os.dup2(high_write, 4)

        self.process = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--ignore-certificate-errors", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}", "--window-size=1400,1800",
             "--remote-debugging-pipe", "about:blank"],
            preexec_fn=pipes, close_fds=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(commands_read)
        os.close(replies_write)
        self.next_id, self.answers, self.lock = 0, {}, threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)

    def _read(self) -> None:
        buffer = b""
        while True:
            chunk = os.read(self.replies, 1 << 16)
            if not chunk:
                return
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            for message in messages:
                found = json.loads(message)
                if "id" in found:
                    with self.lock:
                        self.answers[found["id"]] = found
                        self.lock.notify_all()

    def call(self, method: str, session: bool = False, timeout: float = 60, **params: Any) -> dict[str, Any]:
        with self.lock:
            self.next_id += 1
            number = self.next_id
        message = {"id": number, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self.commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self.lock:
            while number not in self.answers:
                assert self.lock.wait(max(0.0, deadline - time.monotonic())), f"no answer to {method}"
            found = self.answers.pop(number)
        assert "error" not in found, (method, found["error"])
        return found["result"]

    def open(self, url: str) -> None:
        self.call("Page.navigate", session=True, url=url)

    def evaluate(self, expression: str) -> Any:
        found = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True,
                          awaitPromise=True)
        assert "exceptionDetails" not in found, found["exceptionDetails"]
        return found["result"].get("value")

    def wait_for(self, expression: str, timeout: float, poll: float = 0.05) -> Any:
        """The value of `expression` once it is truthy, evaluated every `poll` seconds until `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.evaluate(expression)
            except AssertionError:  # the page is still loading (its script's objects not there yet)
                value = None
            if value:
                return value
            assert time.monotonic() < deadline, f"not within {timeout} s: {expression}"
            time.sleep(poll)

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self.commands)
