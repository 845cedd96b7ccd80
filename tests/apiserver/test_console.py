"""The live fleet console (`inferplane serve`, /console/): opened in a real headless Chromium with the link
the server prints, it shows the mixed fleet, and what kubectl changes after it loaded appears on the
open page without a reload; without the login it is refused; no Secret reaches it."""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from browser import Browser
from served import INFERPLANE, REPO, start

MIXED = REPO / "recipes" / "mixed-fleet"
# How long a change may take to show on the open page: a liveness bound, polled often, not a measure.
LIVE_WITHIN = 2.0


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """The mixed fleet applied, then served; its console link as the server printed it."""
    folder = tmp_path_factory.mktemp("console")
    subprocess.run([*INFERPLANE, "apply", "-f", str(MIXED), "--state", str(folder / "state")], check=True,
                   capture_output=True)
    server = start(folder / "state", folder / "home")
    deadline = time.monotonic() + 30
    while not (links := [line.strip() for line in (folder / "home" / "serve.out").read_text().splitlines()
                         if "/console/?token=" in line]):
        assert time.monotonic() < deadline, "the server printed no console link"
        time.sleep(0.05)
    server.link = links[0]
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser(fleet, tmp_path_factory):
    opened = Browser(tmp_path_factory.mktemp("profile"))
    yield opened
    opened.close()


def rows(browser: Browser, selector: str, attribute: str) -> dict[str, list[str]]:
    return browser.evaluate(f"""Object.fromEntries(Array.from(document.querySelectorAll({json.dumps(selector)}))
        .map(r => [r.getAttribute({json.dumps(attribute)}), Array.from(r.cells).map(c => c.textContent)]))""")


def request(url: str, path: str, headers: dict[str, str] | None = None,
            method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    parts = urlsplit(url)
    connection = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=30,
                                             context=ssl._create_unverified_context())  # loopback, the test's server
    connection.request(method, path, headers=headers or {})
    answer = connection.getresponse()
    body = answer.read()
    connection.close()
    return answer.status, {k.lower(): v for k, v in answer.getheaders()}, body


def logged_in(fleet) -> str:
    """A session cookie, from a new link (`inferplane serve --console-url`)."""
    link = subprocess.run([*INFERPLANE, "serve", "--console-url", "--state", str(fleet.state)], check=True,
                          capture_output=True, text=True).stdout.strip()
    parts = urlsplit(link)
    code, headers, _ = request(link, f"{parts.path}?{parts.query}")
    assert code == 303 and headers["location"] == "/console/"
    return headers["set-cookie"].split(";")[0]


def test_the_printed_link_opens_the_mixed_fleet_and_changes_appear_without_a_reload(fleet, browser):
    assert fleet.link.startswith(f"{fleet.url}/console/?token=")
    browser.open(fleet.link)
    assert browser.wait_for("window.inferplaneConsole && document.getElementById('live').dataset.state", 30) == "live"
    # The login token is spent and gone from the address; the session cookie is not the script's to read.
    assert browser.evaluate("location.href") == f"{fleet.url}/console/"
    assert browser.evaluate("document.cookie") == ""
    assert browser.evaluate("Array.from(document.querySelectorAll('h2')).map(h => h.textContent)") == [
        "Problems (1)", "Models (3)", "Services (2)", "Clusters (6)"]
    assert list(rows(browser, "#cluster-table tr[id]", "id")) == [
        "c-civo-lon", "c-eks-amd", "c-eks-us-east", "c-gke-us-central", "c-nebius-eu", "c-onprem-lab"]
    assert sorted(rows(browser, "tr[data-model]", "data-model")) == [
        "default/llama-3-1-8b", "default/qwen2-5-0-5b-cpu", "default/qwen2-5-7b"]
    services = rows(browser, "tr[data-service]", "data-service")
    assert services["default/qwen"][1] == "http://172.18.255.200/default/qwen"
    browser.evaluate("window.notReloaded = true")

    # A cluster applied with kubectl after the page loaded appears on the open page.
    cluster = next(d for d in yaml.safe_load_all((MIXED / "clusters.yaml").read_text())
                   if d and d["metadata"]["name"] == "civo-lon")
    cluster["metadata"]["name"] = "civo-new"
    fleet.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(cluster))
    browser.wait_for("!!document.getElementById('c-civo-new')", LIVE_WITHIN)
    assert browser.wait_for("document.getElementById('clusters').textContent === 'Clusters (7)'", LIVE_WITHIN)
    # ...a deployment scaled, and its replica placed and Ready as the server reconciles.
    fleet.kubectl("scale", "modeldeployment", "qwen2-5-7b", "--replicas=3")
    browser.wait_for("document.querySelector('tr[data-model=\"default/qwen2-5-7b\"]').cells[1].textContent === '3'",
                     LIVE_WITHIN)
    browser.wait_for("document.querySelector('tr[data-model=\"default/qwen2-5-7b\"]').cells[3].textContent === '3'",
                     30)
    # ...and a cluster deleted goes.
    fleet.kubectl("delete", "inferencecluster", "civo-new")
    browser.wait_for("!document.getElementById('c-civo-new')", LIVE_WITHIN)
    assert browser.evaluate("window.notReloaded") is True
    # The filter and the cards still work on rows the console put there.
    browser.evaluate("document.getElementById('filter').value = 'gke'; "
                     "document.getElementById('filter').dispatchEvent(new Event('input'))")
    assert browser.evaluate("document.getElementById('shown').textContent") == "1 of 6 clusters shown"


def test_the_console_without_the_login_is_refused(fleet):
    code, headers, body = request(fleet.url, "/console/")
    assert code == 401 and headers["content-type"].startswith("text/html")
    assert b"inferplane serve --console-url" in body
    for path in ("/console/fleet", "/console/fleet.js", "/console/fleet?watch=1&resourceVersion=x.1"):
        assert request(fleet.url, path)[0] == 401
    assert request(fleet.url, "/console/?token=not-a-token")[0] == 401

    link = subprocess.run([*INFERPLANE, "serve", "--console-url", "--state", str(fleet.state)], check=True,
                          capture_output=True, text=True).stdout.strip()
    target = link.removeprefix(fleet.url)
    code, headers, _ = request(fleet.url, target)
    assert code == 303
    attributes = {a.strip().split("=")[0] for a in headers["set-cookie"].split(";")[1:]}
    assert {"HttpOnly", "Secure", "SameSite", "Path"} <= attributes and "SameSite=Strict" in headers["set-cookie"]
    # A login token logs in once.
    assert request(fleet.url, target)[0] == 401
    cookie = headers["set-cookie"].split(";")[0]
    assert request(fleet.url, "/console/", {"Cookie": cookie})[0] == 200
    # The cookie opens the console, not the API, and reads only.
    assert request(fleet.url, "/api/v1/namespaces/default/secrets", {"Cookie": cookie})[0] == 401
    assert request(fleet.url, "/console/fleet", {"Cookie": cookie}, method="DELETE")[0] == 405
    # A version the console never gave is a 410 (list again) or a 400, never a 500.
    assert request(fleet.url, "/console/fleet?watch=1&resourceVersion=other.1", {"Cookie": cookie})[0] == 410
    assert request(fleet.url, "/console/fleet?watch=1&resourceVersion=%00", {"Cookie": cookie})[0] == 400
    assert "token=" not in fleet.log.read_text()


def test_no_secret_value_reaches_the_console(fleet):
    token = "s3cr3t-console-probe-7f1c2d"
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "probe", "namespace": "default"},
              "stringData": {"token": token}}
    fleet.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(secret))
    cookie = logged_in(fleet)
    served = b""
    for path in ("/console/", "/console/fleet", "/console/fleet.js"):
        code, headers, body = request(fleet.url, path, {"Cookie": cookie})
        assert code == 200
        served += body + json.dumps(headers).encode()
    version = json.loads(request(fleet.url, "/console/fleet", {"Cookie": cookie})[2])["resourceVersion"]
    code, _, watched = request(fleet.url, f"/console/fleet?watch=1&resourceVersion={version}&timeoutSeconds=2",
                               {"Cookie": cookie})
    assert code == 200 and b"BOOKMARK" in watched
    served += watched
    for form in (token.encode(), base64.b64encode(token.encode())):
        assert form not in served
    assert token not in fleet.log.read_text()
