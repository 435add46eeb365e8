"""Every response the integration suite receives is checked against the published schemas.

``LiveServer.client`` (tests/conftest.py) installs :meth:`ResponseSchemas.check` as an
httpx response hook. The operation is found by method and path in ``schemas/openapi.json``;
the body must follow that document for its status and media type, and also the object
schema ``schemas/index.json`` names for the operation (``exportLog``: every line) and,
for problem+json, ``problem.schema.json``. An undocumented status or media type of a
documented operation is a mismatch too. Paths the document does not list (the console,
``/schema``) are not API operations and are not checked.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

JSON_TYPES = ("application/json", "application/problem+json")
NDJSON = "application/x-ndjson"


class SchemaMismatch(AssertionError):
    """A response that does not follow its published schema."""


@dataclass(frozen=True)
class Route:
    """One operation of the OpenAPI document, matched by method and path."""

    method: str
    pattern: re.Pattern[str]
    template: str
    operation: dict[str, Any]


def _route(method: str, template: str, operation: dict[str, Any]) -> Route:
    parts = re.split(r"(\{[^}]+\})", template)
    regex = "".join("[^/]+" if p.startswith("{") else re.escape(p) for p in parts)
    return Route(method=method.upper(), pattern=re.compile(f"{regex}/?"), template=template,
                 operation=operation)


class ResponseSchemas:
    """The committed ``schemas/`` directory, ready to check responses against."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.openapi = json.loads((directory / "openapi.json").read_text(encoding="utf-8"))
        self.index = json.loads((directory / "index.json").read_text(encoding="utf-8"))
        routes = [_route(method, path, op) for path, item in self.openapi["paths"].items()
                  for method, op in item.items() if isinstance(op, dict) and "responses" in op]
        # Literal segments first: /v1/versions/{id}/diff before /v1/versions/{id}.
        self.routes = sorted(routes, key=lambda r: -len(re.sub(r"\{[^}]+\}", "", r.template)))
        self._validators: dict[str, Draft202012Validator] = {}

    def _file(self, name: str) -> Draft202012Validator:
        if name not in self._validators:
            schema = json.loads((self.directory / name).read_text(encoding="utf-8"))
            self._validators[name] = Draft202012Validator(schema)
        return self._validators[name]

    def _openapi(self, key: str, inline: dict[str, Any]) -> Draft202012Validator:
        if key not in self._validators:
            # The component refs (#/components/schemas/X) resolve against this root.
            self._validators[key] = Draft202012Validator(
                {**inline, "components": self.openapi["components"]})
        return self._validators[key]

    def find(self, method: str, path: str) -> Route | None:
        """The documented operation serving ``method path``, if any."""
        return next((r for r in self.routes
                     if r.method == method and r.pattern.fullmatch(path)), None)

    def check(self, response: httpx.Response) -> None:
        """Raise :class:`SchemaMismatch` unless ``response`` follows its schemas."""
        request = response.request
        path = request.url.raw_path.split(b"?", 1)[0].decode("ascii")
        route = self.find(request.method, path)
        if route is None:
            return
        response.read()
        where = f"{request.method} {path} ({route.operation.get('operationId')}) → " \
                f"{response.status_code}"
        documented = route.operation["responses"].get(str(response.status_code))
        if documented is None:
            raise SchemaMismatch(f"{where}: status not documented in schemas/openapi.json "
                                 f"(documented: {sorted(route.operation['responses'])}); "
                                 f"body: {response.text[:300]}")
        media = response.headers.get("content-type", "").split(";")[0].strip()
        content = documented.get("content") or {}
        if not response.content or request.method == "HEAD":
            return
        if not any(m.split(";")[0].strip() == media for m in content):
            raise SchemaMismatch(f"{where}: media type {media!r} not documented "
                                 f"(documented: {sorted(content)})")
        if media in JSON_TYPES:
            self._check_json(where, route, response, media, content)
        elif media == NDJSON:
            name = self.index["operations"].get(route.operation.get("operationId"))
            for n, line in enumerate(response.text.splitlines(), 1):
                if line and name:
                    self._validate(f"{where} line {n}", self._file(name), name,
                                   json.loads(line))

    def _check_json(self, where: str, route: Route, response: httpx.Response, media: str,
                    content: dict[str, Any]) -> None:
        body = response.json()
        inline = next((v.get("schema") for m, v in content.items()
                       if m.split(";")[0].strip() == media), None)
        if inline:
            key = f"openapi {route.method} {route.template} {response.status_code} {media}"
            self._validate(where, self._openapi(key, inline), "schemas/openapi.json", body)
        if media == "application/problem+json":
            self._validate(where, self._file(self.index["errors"]), self.index["errors"], body)
        elif response.is_success:
            name = self.index["operations"].get(route.operation.get("operationId"))
            if name:
                self._validate(where, self._file(name), name, body)

    @staticmethod
    def _validate(where: str, validator: Draft202012Validator, name: str, body: Any) -> None:
        error = best_match(validator.iter_errors(body))
        if error is not None:
            at = "/" + "/".join(str(p) for p in error.absolute_path)
            raise SchemaMismatch(f"{where}: body does not match {name} at {at}: "
                                 f"{error.message[:300]}")
