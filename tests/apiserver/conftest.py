"""The server fixture: `inferplane serve` on an ephemeral loopback port, stopped after the test."""

import pytest
from served import start


@pytest.fixture
def server(tmp_path):
    running = start(tmp_path / "state", tmp_path / "home")
    yield running
    running.stop()
