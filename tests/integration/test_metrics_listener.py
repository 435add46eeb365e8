"""``/metrics`` lives on the operator's listener, not the tenants' (docs/operations.md,
"Metrics and dashboards"): a real ``stichtag serve`` process, both listeners on loopback
ports chosen free for the test."""

from __future__ import annotations

import signal
import socket
from pathlib import Path

import httpx

from stichtag.bootstrap import bootstrap
from stichtag.config import Settings
from tests.conftest import free_port, make_tenant, start_server


def test_metrics_only_on_the_operator_listener(tmp_path: Path, database: str,
                                               models_dir: Path) -> None:
    port, metrics_port = free_port(), free_port()
    env = {"STICHTAG_DATA_DIR": str(tmp_path / "node"), "STICHTAG_DATABASE_URL": database,
           "STICHTAG_MODELS_DIR": str(models_dir),
           "STICHTAG_METRICS_LISTEN": f"127.0.0.1:{metrics_port}", "STICHTAG_METRICS_KEY": ""}
    svc = bootstrap(Settings(data_dir=tmp_path / "node", database_url=database), embedder=None)
    try:
        who = make_tenant(svc, "acme")
        _, key = svc.access.create_key(who.tenant_id, scopes=["read", "admin"], clearance=3)
    finally:
        svc.close()
    server = start_server(env, port)
    try:
        public = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{public}/metrics").status_code == 404
        tenant_key = httpx.get(f"{public}/metrics", headers={"Authorization": f"Bearer {key}"})
        assert tenant_key.status_code == 404 and "stichtag_" not in tenant_key.text
        assert httpx.get(f"{public}/v1/keys",
                         headers={"Authorization": f"Bearer {key}"}).status_code == 200
        operator = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics")
        assert operator.status_code == 200
        assert operator.headers["content-type"].startswith("text/plain")
        # the request just served on the public listener is counted here
        assert 'stichtag_http_requests_total{operation="listKeys"' in operator.text
        assert httpx.get(f"http://127.0.0.1:{metrics_port}/v1/keys").status_code == 404
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    # the listener went with the server
    try:
        httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=2)
    except httpx.ConnectError:
        pass
    else:
        raise AssertionError("the metrics listener outlived its server")


def test_a_taken_metrics_port_does_not_keep_the_server_from_serving(
        tmp_path: Path, database: str, models_dir: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        env = {"STICHTAG_DATA_DIR": str(tmp_path / "node"), "STICHTAG_DATABASE_URL": database,
               "STICHTAG_MODELS_DIR": str(models_dir),
               "STICHTAG_METRICS_LISTEN": f"127.0.0.1:{taken.getsockname()[1]}"}
        port = free_port()
        server = start_server(env, port)  # waits for /readyz
        try:
            assert httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200
            assert server.poll() is None
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)
