"""The lexical index's German analysis, in pure Python: text -> index terms.

``app/stichtag/index/analyzer.py`` builds the tantivy analyzer (simple tokenizer, lowercase,
Snowball
German stop words, the Snowball *german2* stemmer applied twice, ASCII folding). The domain
may not import tantivy, yet salience must speak the index's language: a document frequency
is looked up by index term, and "covered" must mean what the index would match. This module
reimplements that pipeline with the standard library; ``tests/unit/test_salience.py``
checks it term for term against tantivy on the corpus vocabulary, so a drift in either is a
failing test, not a silent mismatch.

Algorithm: https://snowballstem.org/algorithms/german2/stemmer.html (the variant tantivy's
``rust-stemmers`` ships as "german").
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = ["SNOWBALL_GERMAN_STOPWORDS", "analyze", "stem", "term", "tokens"]

# tantivy's Filter.stopword("german"): the Snowball German list, compared after lower-casing.
SNOWBALL_GERMAN_STOPWORDS = frozenset(str.split("""
aber alle allem allen aller alles als also am an ander andere anderem anderen anderer anderes
anderm andern anderr anders auch auf aus bei bin bis bist da damit dann der den des dem die
das daß derselbe derselben denselben desselben demselben dieselbe dieselben dasselbe dazu
dein deine deinem deinen deiner deines denn derer dessen dich dir du dies diese diesem
diesen dieser dieses doch dort durch ein eine einem einen einer eines einig einige einigem
einigen einiger einiges einmal er ihn ihm es etwas euer eure eurem euren eurer eures für
gegen gewesen hab habe haben hat hatte hatten hier hin hinter ich mich mir ihr ihre ihrem
ihren ihrer ihres euch im in indem ins ist jede jedem jeden jeder jedes jene jenem jenen
jener jenes jetzt kann kein keine keinem keinen keiner keines können könnte machen man
manche manchem manchen mancher manches mein meine meinem meinen meiner meines mit muss
musste nach nicht nichts noch nun nur ob oder ohne sehr sein seine seinem seinen seiner
seines selbst sich sie ihnen sind so solche solchem solchen solcher solches soll sollte
sondern sonst über um und uns unse unsem unsen unser unses unter viel vom von vor
während war waren warst was weg weil weiter welche welchem welchen welcher welches wenn
werde werden wie wieder will wir wird wirst wo wollen wollte würde würden zu zum zur zwar
zwischen
"""))

# tantivy's SimpleTokenizer: a token is a maximal run of alphanumeric characters.
_TOKEN = re.compile(r"[^\W_]+")
_MAX_TOKEN_BYTES = 100

_VOWELS = frozenset("aeiouyäöü")
_S_ENDING = frozenset("bdfghklmnrt")
_ST_ENDING = frozenset("bdfghklmnt")
_ET_ENDING = frozenset("dfgklmnrstUzä")
_STEP1 = ("erinnen", "erin", "ern", "lns", "em", "er", "en", "es", "ln", "e", "s")
_STEP2 = ("est", "en", "er", "st", "et")
_STEP3 = ("isch", "lich", "heit", "keit", "end", "ung", "ig", "ik")
# Stems before "-et" that are words of their own, not a verb's third person.
_ET_KEEP = ("geordn", "intern", "tr")
_POSTLUDE = str.maketrans({"U": "u", "Y": "y", "ä": "a", "ö": "o", "ü": "u"})


def _prelude(word: str) -> str:
    """ß -> ss; u/y between vowels -> U/Y (then consonants); ae/oe/ue -> umlaut, not after q."""
    chars = list(word.replace("ß", "ss"))
    for i in range(1, len(chars) - 1):
        if chars[i] in "uy" and chars[i - 1] in _VOWELS and chars[i + 1] in _VOWELS:
            chars[i] = chars[i].upper()
    out: list[str] = []
    i = 0
    while i < len(chars):
        pair = "".join(chars[i:i + 2])
        if pair == "qu":
            out += chars[i:i + 2]
            i += 2
        elif pair in ("ae", "oe", "ue"):
            out.append({"ae": "ä", "oe": "ö", "ue": "ü"}[pair])
            i += 2
        else:
            out.append(chars[i])
            i += 1
    return "".join(out)


def _region(word: str, start: int) -> int:
    """Start of the region after the first non-vowel that follows a vowel, from ``start``."""
    for i in range(start + 1, len(word)):
        if word[i] not in _VOWELS and word[i - 1] in _VOWELS:
            return i + 1
    return len(word)


def _suffix(word: str, candidates: tuple[str, ...]) -> str | None:
    """The longest candidate ending ``word`` (Snowball's ``among``: no fallback if it fails)."""
    found = [s for s in candidates if word.endswith(s)]
    return max(found, key=len) if found else None


def _step1(word: str, r1: int) -> str:
    suffix = _suffix(word, _STEP1)
    if suffix is None or len(word) - len(suffix) < r1:
        return word
    cut = word[: -len(suffix)]
    if suffix == "em":
        return word if cut.endswith("syst") else cut  # "System" keeps its -em
    if suffix in ("ln", "lns"):
        return cut + "l"  # "Mitteln", "Formeln" -> "mittel", "formel"
    if suffix in ("e", "en", "es"):
        return cut[:-1] if cut.endswith("niss") else cut
    if suffix == "s":
        return cut if cut and cut[-1] in _S_ENDING else word
    return cut  # ern, er, erin, erinnen


def _step2(word: str, r1: int) -> str:
    suffix = _suffix(word, _STEP2)
    if suffix is None or len(word) - len(suffix) < r1:
        return word
    cut = word[: -len(suffix)]
    if suffix == "st":
        # only after a valid st-ending that is itself preceded by three letters
        return cut if len(cut) >= 4 and cut[-1] in _ST_ENDING else word
    if suffix == "et":
        keep = not cut or cut[-1] not in _ET_ENDING or cut.endswith(_ET_KEEP)
        return word if keep else cut
    return cut


def _step3(word: str, r1: int, r2: int) -> str:  # noqa: PLR0911 - a return per Snowball rule
    suffix = _suffix(word, _STEP3)
    at = len(word) - len(suffix) if suffix else -1
    if suffix is None or at < r2:
        return word
    cut = word[:at]
    if suffix in ("end", "ung"):
        if cut.endswith("ig") and not cut.endswith("eig") and len(cut) - 2 >= r2:
            return cut[:-2]
        return cut
    if suffix in ("ig", "ik", "isch"):
        return word if cut.endswith("e") else cut
    if suffix in ("lich", "heit"):
        if cut.endswith(("er", "en")) and len(cut) - 2 >= r1:
            return cut[:-2]
        return cut
    inner = _suffix(cut, ("lich", "ig"))  # keit
    if inner is not None and len(cut) - len(inner) >= r2:
        return cut[: -len(inner)]
    return cut


def stem(word: str) -> str:
    """One pass of Snowball german2 over a lower-case word (umlauts folded at the end)."""
    w = _prelude(word)
    raw_r1 = _region(w, 0)
    r1, r2 = max(raw_r1, 3), _region(w, raw_r1)  # R2 starts from R1 before the adjustment
    w = _step1(w, r1)
    w = _step2(w, r1)
    w = _step3(w, r1, r2)
    return w.translate(_POSTLUDE)


def _ascii_fold(word: str) -> str:
    """Accents off what the stemmer left (tantivy's ascii_fold, for the letters that occur)."""
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


@lru_cache(maxsize=1 << 16)  # pure; a corpus has far fewer distinct words
def term(token: str) -> str | None:
    """The index term of one token, or None when the index drops it (stop word, too long)."""
    low = token.lower()
    if len(token.encode("utf-8")) >= _MAX_TOKEN_BYTES or low in SNOWBALL_GERMAN_STOPWORDS:
        return None
    # Twice, like the analyzer: Snowball strips one ending per pass ("Zinses" -> "zins").
    return _ascii_fold(stem(stem(low)))


def tokens(text: str) -> list[tuple[int, int, str]]:
    """(start, end, token) of every alphanumeric run in ``text`` (NFC), in order."""
    return [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(text)]


def analyze(text: str) -> list[str]:
    """The index terms of ``text`` in order, duplicates kept, as tantivy indexes them."""
    text = unicodedata.normalize("NFC", text)
    return [t for _, _, tok in tokens(text) if (t := term(tok)) is not None]
