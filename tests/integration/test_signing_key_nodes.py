"""Nodes that share a database share each tenant's run log, so they must share the
signing key. A node whose key did not sign the stored head refuses to append or to sign
a checkpoint (before the fix it silently signed with its own, per-data-dir key and left
a log whose checkpoints no single public key verifies); a declared rotation is allowed."""

from __future__ import annotations

import contextlib
import io
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from stichtag.audit.signing import FileSigner, load_public_key
from stichtag.audit.verify import verify_export
from stichtag.cli import main
from stichtag.config import load_settings
from stichtag.services.runlog import RunLog, SigningKeyMismatchError


def _append(log: RunLog, tenant_id: uuid.UUID, n: int, units: Any) -> int:
    with units.unit(tenant_id) as uow:
        seq, _ = log.append(uow, tenant_id, run_id=uuid.uuid4(), kind="search", key_id="t",
                            record={"n": n})
    return seq


def test_second_key_is_refused_and_rotation_is_explicit(services: Any, tenant: Any,
                                                        tmp_path: Path) -> None:
    node_a = RunLog(services.store.runs, FileSigner(tmp_path / "a" / "signing.key"),
                    services.clock)
    # node B generated its own key; "shared" uses the same key file as A
    node_b = RunLog(services.store.runs, FileSigner(tmp_path / "b" / "signing.key"),
                    services.clock)
    shared = RunLog(services.store.runs, FileSigner(tmp_path / "a" / "signing.key"),
                    services.clock)
    tid = tenant.tenant_id
    assert _append(node_a, tid, 0, services.store.units) == 0
    assert _append(shared, tid, 1, services.store.units) == 1  # same key: fine
    with pytest.raises(SigningKeyMismatchError):
        _append(node_b, tid, 2, services.store.units)
    with pytest.raises(SigningKeyMismatchError):
        node_b.checkpoint(tid)
    assert node_a.head(tid)[0] == 2  # the refused append left no trace

    # Rotation: B's key takes over, naming A's public key as the previous one.
    (tmp_path / "a.pem").write_text(node_a.public_key(), encoding="utf-8")
    older = node_a.checkpoint(tid)
    rotated = RunLog(services.store.runs, FileSigner(
        tmp_path / "b" / "signing.key", previous=(load_public_key(tmp_path / "a.pem"),)),
        services.clock)
    assert _append(rotated, tid, 2, services.store.units) == 2
    assert _append(node_b, tid, 3, services.store.units) == 3  # the head now carries B's signature
    with pytest.raises(SigningKeyMismatchError):
        _append(node_a, tid, 4, services.store.units)  # A's key was rotated out
    export = list(node_b.export(tid))
    new_key = load_public_key(node_b.public_key())
    assert verify_export(export, new_key).ok
    # A checkpoint signed before the rotation verifies only with the old key.
    old_key = load_public_key(tmp_path / "a.pem")
    assert verify_export(export, old_key, older_checkpoint=older).ok is False
    assert verify_export(export, new_key, older_checkpoint=older).ok is False
    # ... so the verifier names both keys: the log grew from the old checkpoint.
    assert verify_export(export, new_key, older_checkpoint=older,
                         older_public_key=load_public_key(tmp_path / "a.pem")).ok


def test_settings_and_cli_for_a_rotation(services: Any, tenant: Any, tmp_path: Path) -> None:
    previous = f"{tmp_path}/a.pem, {tmp_path}/b.pem"
    settings = load_settings({"STICHTAG_SIGNING_KEY_PREVIOUS": previous})
    assert settings.signing_key_previous == (tmp_path / "a.pem", tmp_path / "b.pem")
    assert load_settings({}).signing_key_previous == ()

    old = RunLog(services.store.runs, FileSigner(tmp_path / "old.key"), services.clock)
    _append(old, tenant.tenant_id, 0, services.store.units)
    (tmp_path / "old.pem").write_text(old.public_key(), encoding="utf-8")
    (tmp_path / "cp.txt").write_text(old.checkpoint(tenant.tenant_id), encoding="utf-8")
    new = RunLog(services.store.runs, FileSigner(
        tmp_path / "new.key", previous=(load_public_key(tmp_path / "old.pem"),)),
        services.clock)
    _append(new, tenant.tenant_id, 1, services.store.units)
    (tmp_path / "new.pem").write_text(new.public_key(), encoding="utf-8")
    (tmp_path / "log.jsonl").write_text(
        "".join(line + "\n" for line in new.export(tenant.tenant_id)), encoding="utf-8")
    args = ["--json", "log", "verify", str(tmp_path / "log.jsonl"), "--public-key",
            str(tmp_path / "new.pem"), "--older-checkpoint", str(tmp_path / "cp.txt")]
    for extra, ok in (([], False), (["--older-public-key", str(tmp_path / "old.pem")], True)):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main([*args, *extra])
        report = json.loads(out.getvalue())
        assert (code == 0) is ok and report["ok"] is ok, report


def test_a_node_with_another_key_answers_503_and_records_nothing(live: Any, tenant: Any,
                                                                 tmp_path: Path) -> None:
    """Over HTTP the mismatch is the node's fault, not the client's: 503 problem+json that
    names neither key nor path, and the log is unchanged."""
    other = RunLog(live.services.store.runs, FileSigner(tmp_path / "other" / "signing.key"),
                   live.services.clock)
    # the log head now carries another node's key
    _append(other, tenant.tenant_id, 0, live.services.store.units)
    key = live.key(tenant)
    with live.client(key) as http:
        r = http.post("/v1/search", json={"query": "Höchstrechnungszins"})
        assert r.status_code == 503, r.text
        assert r.headers["content-type"].startswith("application/problem+json")
        assert "another node" in r.json()["detail"]
        assert "signing.key" not in r.text and str(tmp_path) not in r.text
    assert live.services.runlog.head(tenant.tenant_id)[0] == 1
