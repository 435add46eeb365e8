"""A checkpoint fetched on demand and an export taken later, with no run in between, are
of the same tree; the export must not look older. (The export used to carry the head's
checkpoint from the last append, so `log verify --older-checkpoint` with a checkpoint an
auditor fetched afterwards reported a rollback; found in the restore drill.)"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

from stichtag.audit.signing import FileSigner, load_public_key
from stichtag.audit.verify import verify_export
from stichtag.services.runlog import RunLog


def test_export_after_an_on_demand_checkpoint_verifies(services: Any, tenant: Any,
                                                      tmp_path: Path) -> None:
    log = RunLog(services.store.runs, FileSigner(tmp_path / "signing.key"), services.clock)
    for n in range(2):
        with services.store.units.unit(tenant.tenant_id) as uow:
            log.append(uow, tenant.tenant_id, run_id=uuid.uuid4(), kind="search", key_id="t",
                       record={"n": n})
    time.sleep(1.1)  # checkpoint timestamps have one-second resolution
    fetched = log.checkpoint(tenant.tenant_id)
    time.sleep(1.1)
    export = list(log.export(tenant.tenant_id))
    report = verify_export(export, load_public_key(log.public_key()), older_checkpoint=fetched)
    assert report.ok, report.problems
    assert report.record_count == 2
