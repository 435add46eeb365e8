"""Admin endpoints for the caller's own tenant's API keys."""

from __future__ import annotations

from litestar import Controller, get, post
from litestar.params import FromPath, JSONBody

from stichtag.api import convert
from stichtag.api.deps import Svc, Who, optional_time
from stichtag.api.schemas import KeyBody, KeyCreated, KeyInfo, KeyList
from stichtag.domain.errors import Invalid
from stichtag.services.access import parse_clearance, parse_scopes


class KeyController(Controller):
    """Create, list, revoke and rotate keys (scope ``admin``)."""

    path = "/v1/keys"
    tags = ("keys",)

    @post("/", operation_id="createKey", status_code=201, sync_to_thread=True)
    def create(self, data: JSONBody[KeyBody], svc: Svc, who: Who) -> KeyCreated:
        """Create a key; the plaintext is returned once."""
        who.require("admin")
        clearance = parse_clearance(data.clearance)
        if clearance > who.clearance:
            raise Invalid("clearance", "cannot exceed the clearance of the creating key")
        expires = optional_time(who, data.expires_at, field="expires_at")
        row, token = svc.access.create_key(who.tenant_id, scopes=parse_scopes(data.scopes),
                                           clearance=clearance, label=data.label,
                                           expires_at=expires)
        return KeyCreated(key=token, info=convert.key_info(row))

    @get("/", operation_id="listKeys", sync_to_thread=True)
    def list_keys(self, svc: Svc, who: Who) -> KeyList:
        """All keys of the tenant, without secrets."""
        who.require("admin")
        return KeyList(keys=[convert.key_info(k) for k in svc.access.list_keys(who.tenant_id)])

    @post("/{key_id:str}/revoke", operation_id="revokeKey", status_code=200, sync_to_thread=True)
    def revoke(self, key_id: FromPath[str], svc: Svc, who: Who) -> KeyInfo:
        """Revoke a key; it is refused from the next request on."""
        who.require("admin")
        return convert.key_info(
            svc.access.revoke(who.tenant_id, key_id, max_clearance=who.clearance))

    @post("/{key_id:str}/rotate", operation_id="rotateKey", status_code=201, sync_to_thread=True)
    def rotate(self, key_id: FromPath[str], svc: Svc, who: Who) -> KeyCreated:
        """Issue a successor key with the same scopes and clearance; revoke the old one."""
        who.require("admin")
        row, token = svc.access.rotate(who.tenant_id, key_id, max_clearance=who.clearance)
        return KeyCreated(key=token, info=convert.key_info(row))
