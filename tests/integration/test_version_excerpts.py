"""Excerpts of a version (the blocks around some windows) cut exactly as the whole version.

The answer's evidence is cut from excerpts (docs/retrieval.md; a whole version assembled on a
cache miss was the answer's p95 tail); a quote, prefix or suffix that differed by one
code point would break every replay of a recorded run. These tests compare excerpts with
the whole version on a text with many sections, multi-byte and astral characters, over
many random windows, and check clearance on the one read.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime

from stichtag.bootstrap import Services
from stichtag.services.access import Principal
from stichtag.services.documents import IngestRequest


def _text(sections: int, seed: int) -> str:
    rng = random.Random(seed)
    words = ["Deckungsrückstellung", "Höchstrechnungszins", "§", "Abs.", "1,75 %", "Zürich",
             "Überschuss", "straße", "\U0001d538sset", "naïve", "Fassung", "gilt", "ab"]
    parts = [f"# Gesetz {seed}\n"]
    for i in range(1, sections + 1):
        parts.append(f"\n## § {i} Abschnitt {rng.choice(words)}\n")
        for j in range(rng.randint(1, 4)):
            sentence = " ".join(rng.choice(words) for _ in range(rng.randint(4, 18)))
            parts.append(f"\n({j + 1}) {sentence.capitalize()}. Weiter {i}.{j} gilt.\n")
    return "".join(parts)


def _ingest(services: Services, who: Principal, key: str, text: str, *,
            confidentiality: str = "internal") -> str:
    result = services.documents.ingest(who, key, IngestRequest(
        text=text, valid_from=datetime(2020, 1, 1, tzinfo=UTC),
        confidentiality=confidentiality))
    return result.version_id


def test_every_cut_inside_the_windows_equals_the_whole_version(services: Services,
                                                               tenant: Principal) -> None:
    ids = [_ingest(services, tenant, f"law-{n}", _text(60, n)) for n in range(3)]
    store = services.store.documents
    whole = {vid: store.version_content(tenant.tenant_id, version_id=vid, clearance=3)
             for vid in ids}
    rng = random.Random(7)
    for _ in range(60):
        windows = []
        for _ in range(rng.randint(1, 6)):
            vid = rng.choice(ids)
            length = len(whole[vid].text)  # type: ignore[union-attr]
            lo = rng.randint(-40, length)
            windows.append((vid, lo, lo + rng.randint(1, 400)))
        read = store.version_excerpts(tenant.tenant_id, windows, clearance=3)
        assert read is not None
        for vid, lo, hi in windows:
            full = whole[vid]
            assert full is not None
            excerpt = read[vid]
            assert excerpt.length == len(full.text)
            for _ in range(5):  # cuts inside the window, as evidence and context take them
                a = rng.randint(lo, hi)
                b = rng.randint(a, hi)
                assert excerpt.slice(a, b) == full.text[max(0, a):max(0, b)], (vid, a, b)
                assert full.slice(a, b) == excerpt.slice(a, b)  # a cached whole version
            inside = [s for s in full.sentences if s.start < hi and s.end > lo]
            assert set(inside) <= set(excerpt.sentences)  # same offsets, ordinals, hashes
        for vid, excerpt in read.items():
            assert set(excerpt.sentences) <= set(whole[vid].sentences)  # type: ignore[union-attr]


def test_a_cut_outside_the_blocks_read_is_refused(services: Services,
                                                  tenant: Principal) -> None:
    vid = _ingest(services, tenant, "long", _text(80, 11))
    read = services.store.documents.version_excerpts(tenant.tenant_id, [(vid, 10, 20)],
                                                     clearance=3)
    assert read is not None
    excerpt = read[vid]
    assert excerpt.slice(10, 20)
    far = excerpt.length - 5
    try:
        excerpt.slice(far - 10, far)
    except ValueError as exc:
        assert "does not cover" in str(exc)
    else:
        raise AssertionError("a cut far from the window was answered")


def test_a_version_above_clearance_refuses_the_whole_read(services: Services,
                                                          tenant: Principal) -> None:
    open_id = _ingest(services, tenant, "open", _text(5, 21))
    secret_id = _ingest(services, tenant, "secret", _text(5, 22), confidentiality="secret")
    store = services.store.documents
    both = [(open_id, 0, 50), (secret_id, 0, 50)]
    assert store.version_excerpts(tenant.tenant_id, both, clearance=3) is not None
    assert store.version_excerpts(tenant.tenant_id, both, clearance=1) is None
    assert store.version_excerpts(tenant.tenant_id, [(open_id, 0, 50)], clearance=1,
                                  also_check=[secret_id]) is None
    assert store.version_excerpts(tenant.tenant_id, [(open_id, 0, 50)],
                                  clearance=1) is not None
    assert store.version_excerpts(tenant.tenant_id, [("b3:" + "0" * 64, 0, 5)],
                                  clearance=3) is None
