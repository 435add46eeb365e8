"""The container image as an operator runs it: start, load the demo, answer over HTTP.

The image is built by ``make image`` (ops/image/build.sh; too slow for the ordinary suite,
which never builds it). This test runs when the image exists or when
``STICHTAG_IMAGE_TEST=1`` (``make image`` sets it, and then a missing builder or image is
a failure, not a skip); otherwise it skips, naming what is missing. ``STICHTAG_IMAGE``
names another tag than ``localhost/stichtag:latest``.

The container runs the embedded PostgreSQL inside, its data directory on an anonymous
volume; the port is published on 127.0.0.1 only. The container and its volume are
removed afterwards whatever happens.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.conftest import REPO, response_schemas

IMAGE = os.environ.get("STICHTAG_IMAGE", "localhost/stichtag:latest")
PODMAN = REPO / "ops" / "image" / "podman.sh"
"""podman with the flags this kind of host needs (see the script)."""
QUESTION = "Welcher Höchstrechnungszins gilt für Neugeschäft?"
START_TIMEOUT = 180.0


def _podman(*args: str, timeout: float = 120,
            check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(PODMAN), *args], capture_output=True, text=True,
                          timeout=timeout, check=check)


def _missing() -> str | None:
    """What stops the test from running, or None."""
    if shutil.which("podman") is None:
        return ("podman is not installed (the image builder): run `make image`, which installs "
                "Debian's podman, runc and mmdebstrap and builds " + IMAGE)
    if _podman("image", "exists", IMAGE, check=False).returncode != 0:
        return f"image {IMAGE} is not built: run `make image`"
    return None


@pytest.fixture(scope="module")
def image() -> str:
    missing = _missing()
    if missing is not None:
        if os.environ.get("STICHTAG_IMAGE_TEST") == "1":
            pytest.fail(f"STICHTAG_IMAGE_TEST=1 but {missing}")
        pytest.skip(missing)
    return IMAGE


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Container:
    name: str
    base_url: str
    started: float
    """time.monotonic() just before `podman run`."""

    def logs(self) -> str:
        out = _podman("logs", self.name, check=False)
        return (out.stdout + out.stderr)[-3000:]

    def exec(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return _podman("exec", self.name, *args, timeout=timeout, check=False)


@pytest.fixture
def container(image: str) -> Iterator[Container]:
    name = f"stichtag-smoke-{uuid.uuid4().hex[:12]}"
    port = _free_port()
    started = time.monotonic()
    _podman("run", "--detach", "--name", name,
            # loopback only: the demo key is an admin key
            "--publish", f"127.0.0.1:{port}:8000",
            # STICHTAG_DATA_DIR (embedded PostgreSQL, indexes, signing key) on a volume
            "--volume", "/var/lib/stichtag",
            image)
    try:
        yield Container(name=name, base_url=f"http://127.0.0.1:{port}", started=started)
    finally:
        # --volumes: the anonymous data volume goes with the container
        _podman("rm", "--force", "--volumes", "--time", "10", name, check=False)


def _wait_ready(box: Container) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        state = _podman("inspect", "--format", "{{.State.Running}}", box.name, check=False)
        if state.stdout.strip() != "true":
            pytest.fail(f"container {box.name} stopped before it was ready:\n{box.logs()}")
        try:
            if httpx.get(f"{box.base_url}/readyz", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    pytest.fail(f"{box.base_url}/readyz not ready after {START_TIMEOUT:.0f} s:\n{box.logs()}")


def test_the_image_answers_with_a_citation_and_keeps_its_data(container: Container) -> None:
    _wait_ready(container)
    ready = time.monotonic()

    # the server runs unprivileged (the embedded PostgreSQL refuses root), and the image
    # carries neither a compiler nor pip
    who = container.exec("sh", "-c", "id -un; command -v gcc cc pip pip3 || true")
    assert who.returncode == 0, who.stderr
    assert who.stdout.split() == ["stichtag"], who.stdout

    demo = container.exec("stichtag", "demo", "--json")
    assert demo.returncode == 0, demo.stderr[-3000:]
    loaded = json.loads(demo.stdout)
    assert loaded["created"] is True, loaded
    key = loaded["key"]
    demo_done = time.monotonic()

    with httpx.Client(base_url=container.base_url, headers={"Authorization": f"Bearer {key}"},
                      timeout=60, event_hooks={"response": [response_schemas().check]}) as http:
        r = http.post("/v1/answer", json={"question": QUESTION, "valid_at": "2022-06-01"})
    answered = time.monotonic()
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["status"] == "answered", body
    citations = [c for s in body["sentences"] for c in s["citations"]]
    assert body["sentences"] and all(s["citations"] for s in body["sentences"]), body
    # the rate in force on 2022-06-01 in the demo corpus, quoted verbatim from its source
    assert any("0,25 %" in c["quote"] for c in citations), citations

    print(f"\n{IMAGE}: ready {ready - container.started:.1f} s after `podman run`, "
          f"demo loaded in {demo_done - ready:.1f} s, first answer in {answered - demo_done:.2f} s "
          f"({answered - container.started:.1f} s from `podman run` to the first answer)")

    # `podman stop` (SIGTERM) shuts the server and its PostgreSQL down cleanly, and the data
    # directory on the volume survives: after a restart the same key gets the same answer.
    stopped = _podman("stop", "--time", "30", container.name, check=False)
    assert stopped.returncode == 0, stopped.stderr
    code = _podman("inspect", "--format", "{{.State.ExitCode}}", container.name).stdout.strip()
    assert code == "0", container.logs()
    _podman("start", container.name)
    _wait_ready(container)
    with httpx.Client(base_url=container.base_url, headers={"Authorization": f"Bearer {key}"},
                      timeout=60, event_hooks={"response": [response_schemas().check]}) as http:
        again = http.post("/v1/answer", json={"question": QUESTION, "valid_at": "2022-06-01"})
    assert again.status_code == 200, again.text
    assert again.json()["status"] == "answered", again.json()
    assert any("0,25 %" in c["quote"] for s in again.json()["sentences"] for c in s["citations"])
