"""The committed schemas/ follow the code, are valid JSON Schema 2020-12, and their
examples validate (app/stichtag/api/published.py; the responses are checked in
tests/conftest.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from stichtag.api import published

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = REPO / "schemas"


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_committed_schemas_are_those_the_code_generates() -> None:
    problems = published.drift(SCHEMAS)
    assert not problems, "schemas/ drifted from the code:\n" + "\n".join(problems)


def test_drift_names_the_file_and_the_first_difference(tmp_path: Path) -> None:
    target = tmp_path / "schemas"
    shutil.copytree(SCHEMAS, target)
    assert published.drift(target) == []
    citation = _load(target / "citation.schema.json")
    del citation["$defs"]["CitationOut"]["properties"]["quote"]
    (target / "citation.schema.json").write_text(json.dumps(citation), encoding="utf-8")
    (target / "version.schema.json").unlink()
    (target / "old.schema.json").write_text("{}", encoding="utf-8")
    problems = published.drift(target)
    assert problems == [
        f"{target}/citation.schema.json: /$defs/CitationOut/properties/quote: missing "
        '(expected {"type": "string"}); run `make schemas`',
        f"{target}/version.schema.json: missing; run `make schemas`",
        f"{target}/old.schema.json: not generated from the code; remove it"]


def test_first_difference_walks_lists_and_values() -> None:
    assert published.first_difference({"a": [1, 2]}, {"a": [1, 2]}) is None
    assert published.first_difference({"a": [1, 2]}, {"a": [1, 3]}) == "/a/1: expected 2, found 3"
    assert published.first_difference([1], [1, 2]) == ": 2 items, expected 1"
    assert published.first_difference(1, 1.0) == "/: expected 1, found 1.0"
    assert published.first_difference({}, {"x": 1}) == "/x: not generated any more (found 1)"


def test_make_schemas_writes_what_the_check_expects(tmp_path: Path) -> None:
    assert published.main([str(tmp_path)]) == 0
    assert published.main(["--check", str(tmp_path)]) == 0
    (tmp_path / "problem.schema.json").write_text("{}", encoding="utf-8")
    assert published.main(["--check", str(tmp_path)]) == 1


SCHEMA_FILES = sorted(SCHEMAS.glob("*.schema.json"))


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=lambda p: p.name)
def test_each_schema_is_2020_12_and_its_examples_validate(path: Path) -> None:
    schema = _load(path)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    assert schema["examples"], f"{path.name} has no example"
    for i, example in enumerate(schema["examples"]):
        errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
                  for e in validator.iter_errors(example)]
        assert not errors, f"{path.name} example {i}: {errors}"


def test_every_public_object_of_the_issue_has_a_schema() -> None:
    names = {p.name.removesuffix(".schema.json") for p in SCHEMA_FILES}
    assert names >= {"answer", "citation", "abstention", "search-hit", "version", "assertion",
                     "history", "knowledge-diff", "run-record", "log-leaf", "checkpoint",
                     "export-line", "review-sample", "review-verdict", "problem"}
    index = _load(SCHEMAS / "index.json")
    for operation, name in index["operations"].items():
        assert (SCHEMAS / name).exists(), operation
    operations = {op["operationId"] for item in _load(SCHEMAS / "openapi.json")["paths"].values()
                  for op in item.values() if isinstance(op, dict) and "operationId" in op}
    assert set(index["operations"]) <= operations


def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(_load(SCHEMAS / name))


def test_the_schemas_refuse_what_they_should() -> None:
    answer = _load(SCHEMAS / "answer.schema.json")["examples"][0]
    # an answered response is no abstention, and an abstention needs a known reason
    assert not _validator("abstention.schema.json").is_valid(answer)
    abstained = _load(SCHEMAS / "abstention.schema.json")["examples"][0]
    assert not _validator("abstention.schema.json").is_valid({**abstained, "reason": "tired"})
    citation = {**answer["sources"][0]["citation"]}
    del citation["quote"]
    assert not _validator("citation.schema.json").is_valid(citation)
    # an export line is exactly one of header, leaf, checkpoint
    lines = _validator("export-line.schema.json")
    assert not lines.is_valid({"checkpoint": "x", "seq": 0})
    assert not lines.is_valid({"seq": 0, "record": {"kind": "unknown"}})
    run = _load(SCHEMAS / "run.schema.json")["examples"][0]
    assert not _validator("run.schema.json").is_valid({**run, "record": {"kind": "search"}})
    assert not _validator("problem.schema.json").is_valid({"title": "x", "status": 400})
