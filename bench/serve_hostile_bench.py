"""Hostile clients against a real `inferplane serve` (issue 49), each figure read from /proc: the server's
resident memory (VmRSS, and its peak VmHWM) after each hostile body, how long each took to be refused;
its threads (/proc/PID/task) and the file descriptors it holds on the state's files (/proc/PID/fd) before,
during and after 200 raw watches and 20 `kubectl get -w` interrupted; how long a quiet watch with
timeoutSeconds=2 lasts. Loopback only. Usage: python bench/serve_hostile_bench.py"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "apiserver"))

from served import KUBECTL, start  # noqa: E402
from test_hostile import (CONFIGMAPS, JSON, JSON_PATCH, MERGE, STRATEGIC, YAML, alias_bomb, configmap,  # noqa: E402
                          nested_json, raw, send)

FOLDER = Path(tempfile.mkdtemp(prefix="serve-hostile-"))

srv = start(FOLDER / "state", FOLDER / "home")
pid = srv.process.pid
state = str((FOLDER / "state").resolve())
def status():
    d = dict(l.split(":", 1) for l in open(f"/proc/{pid}/status").read().splitlines())
    return int(d["VmRSS"].split()[0]) // 1024, int(d["VmHWM"].split()[0]) // 1024
def threads(): return len(os.listdir(f"/proc/{pid}/task"))
def store_fds():
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith(state): n += 1
        except OSError: pass
    return n
print("pid", pid, "rss/hwm MiB", status(), "threads", threads(), "store fds", store_fds())
assert send(srv, "POST", CONFIGMAPS, configmap())[0] == 201
cases = [("alias bomb 10 levels (%d bytes)" % len(alias_bomb(10)), "POST", CONFIGMAPS, alias_bomb(10), YAML),
         ("alias bomb 7 levels", "POST", CONFIGMAPS, alias_bomb(7), YAML),
         ("self-referencing anchor", "POST", CONFIGMAPS, b"apiVersion: v1\nkind: ConfigMap\nmetadata: &a {name: x, labels: *a}\n", YAML),
         ("YAML nested 20,000", "POST", CONFIGMAPS, b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: " + b"[" * 20000 + b"]" * 20000, YAML),
         ("JSON nested 5,000 POST", "POST", CONFIGMAPS, configmap('{"a": %s}' % nested_json(5000)), JSON),
         ("JSON nested 5,000 PUT", "PUT", CONFIGMAPS + "/cm", configmap('{"a": %s}' % nested_json(5000)), JSON),
         ("JSON nested 5,000 merge patch", "PATCH", CONFIGMAPS + "/cm", ('{"data": {"a": %s}}' % nested_json(5000)).encode(), MERGE),
         ("JSON nested 5,000 strategic patch", "PATCH", CONFIGMAPS + "/cm", ('{"data": {"a": %s}}' % nested_json(5000)).encode(), STRATEGIC),
         ("JSON-patch value nested 5,000", "PATCH", CONFIGMAPS + "/cm", ('[{"op": "add", "path": "/data/a", "value": %s}]' % nested_json(5000)).encode(), JSON_PATCH),
         ("JSON duplicate key", "POST", CONFIGMAPS, configmap('{"a": "b", "a": "c"}'), JSON),
         ("YAML duplicate key", "POST", CONFIGMAPS, b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d}\ndata: {a: b, a: c}\n", YAML),
         ("YAML 100,000-digit integer", "POST", CONFIGMAPS, b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d, generation: " + b"9" * 100000 + b"}\n", YAML),
         ]
for name, method, path, body, ctype in cases:
    t0 = time.monotonic()
    code, answer = send(srv, method, path, body, ctype)
    took = time.monotonic() - t0
    after = send(srv, "GET", CONFIGMAPS + "/cm")[0]
    print(f"{name}: {code} {answer.get('reason')} in {took:.2f} s; then GET {after}; rss/peak MiB {status()}; msg: {answer.get('message','')[:110]}")
# watches
time.sleep(1)
base = (threads(), store_fds())
print("before watches: threads", base[0], "store fds", base[1])
socks = []
for i in range(200):
    s, token = raw(srv)
    s.sendall(f"GET {CONFIGMAPS}?watch=true HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    s.recv(65536)
    socks.append(s)
print("200 watches open: threads", threads(), "store fds", store_fds())
for s in socks: s.close()
t0 = time.monotonic()
while time.monotonic() - t0 < 15 and (threads(), store_fds()) != base:
    time.sleep(0.25)
print(f"200 watches closed: threads {threads()} store fds {store_fds()} after {time.monotonic()-t0:.1f} s")
# kubectl get -w interrupted
procs = [subprocess.Popen([str(KUBECTL), "--kubeconfig", str(srv.kubeconfig), "get", "configmaps", "-w"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={"HOME": str(FOLDER / "home"), "PATH": "/usr/bin:/bin"}) for _ in range(20)]
time.sleep(8)
print("20 kubectl get -w running: threads", threads(), "store fds", store_fds())
for p in procs: p.send_signal(signal.SIGINT)
for p in procs: p.wait()
t0 = time.monotonic()
while time.monotonic() - t0 < 15 and (threads(), store_fds()) != base:
    time.sleep(0.25)
print(f"20 kubectl get -w interrupted: threads {threads()} store fds {store_fds()} after {time.monotonic()-t0:.1f} s")
s, token = raw(srv)
t0 = time.monotonic()
s.sendall(f"GET {CONFIGMAPS}?watch=true&timeoutSeconds=2 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
got = b""
while not got.endswith(b"0\r\n\r\n"):
    got += s.recv(65536)
print(f"quiet watch timeoutSeconds=2 ended after {time.monotonic()-t0:.1f} s")
print("final rss/peak MiB", status())
log = srv.stop()
print("tracebacks in log:", log.count("Traceback"), "; 500s:", log.count(" 500 "))
shutil.rmtree(FOLDER, ignore_errors=True)
