"""Words and quantities of German and English text, for the gates and salience.

Pure: content words (stopwords dropped, case and umlauts folded) and the quantities a
text states (a number with its unit, canonicalized), so that "0,25 %" and "0.25 Prozent"
compare equal. Split out of app/stichtag/domain/answer.py, whose contradiction check, extractive
generator and salience rules all read text through these.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

STOPWORDS = frozenset(str.split("""
aber alle allem allen aller alles als also am an ander andere anderen anderer anderes auch
auf aus bei beim bereits bis bzw da dabei damit dann das dass dem den denen denn der deren
des dessen die dies diese diesem diesen dieser dieses doch dort du durch ein eine einem einen
einer eines er es etwa für gegen gibt gilt galt gelten galten gewesen hab habe haben hat
hatte hier hin hoch ich ihr ihre im in ist ja jede jedem jeden jeder jedes jetzt kann kein
keine können könnte lange man mehr mit muss müssen nach nicht noch nun nur ob oder ohne sehr
sei seit sich sie sind so soll sollen sowie über um und uns unter viel viele vom von vor
war waren warum was weil welche welchem welchen welcher welches wenn wer werden wie wieviel
wir wird wo worden wurde wurden zu zum zur zwischen beträgt betrug betragen lautet liegt
a about after all also an and any are as at be been but by can could did do does for from
had has have how if in into is it its many may much must no not of on or should so than
that the their then there these this those to under was were what when where which while
who whom why will with would apply applies applied current currently
"""))

_FOLD = str.maketrans({"ä": "a", "ö": "o", "ü": "u", "ß": "ss"})
_WORD = re.compile(r"[^\W_]+(?:-[^\W_]+)*")


def fold(word: str) -> str:
    """Case- and umlaut-insensitive form: "Höchstzinssatz" and "HOCHSTZINSSATZ" meet."""
    return word.casefold().translate(_FOLD)


def content_words(text: str) -> list[str]:
    """Words of ``text`` that carry content: no stopwords, no bare numbers (in order)."""
    return [w for w in _WORD.findall(text)
            if w.casefold() not in STOPWORDS and not any(c.isdigit() for c in w)]


_NUMBER = r"\d+(?:[.,\u00a0\u202f]\d+)*"
_UNIT = (r"%|‰|prozent|percent|per\s?cent|v\.\s?h\.|promille|eur|euro|€|usd|\$"
         r"|tagen|tage|tag|days?|wochen|woche|weeks?|monaten|monate|monat|months?"
         r"|jahren|jahre|jahr|years?")
_QUANTITY = re.compile(
    rf"(?<![\w.,])(?:(?P<pre>euro?|€|usd|\$)\s?(?P<n1>{_NUMBER})"
    rf"|(?P<n2>{_NUMBER})\s?(?P<unit>{_UNIT}))(?!\w)", re.IGNORECASE)
# Unit spellings (casefolded, spaces removed) by prefix -> canonical unit.
_UNIT_PREFIXES = (("%", "%"), ("prozent", "%"), ("percent", "%"), ("v.h.", "%"),
                  ("‰", "‰"), ("promille", "‰"), ("eur", "EUR"),
                  ("€", "EUR"), ("usd", "USD"), ("$", "USD"), ("tag", "days"),
                  ("day", "days"), ("woche", "weeks"), ("week", "weeks"),
                  ("monat", "months"), ("month", "months"), ("jahr", "years"),
                  ("year", "years"))


def _unit(spelled: str) -> str:
    key = "".join(spelled.casefold().split())
    return next((canon for prefix, canon in _UNIT_PREFIXES if key.startswith(prefix)), key)


def _decimal(raw: str) -> Decimal | None:
    """German-first number reading: "1,75" = 1.75, "12.000" = 12000, "1.234,5" = 1234.5."""
    s = raw.replace("\u00a0", "").replace("\u202f", "")
    if "," in s and "." in s:
        decimal_mark = "," if s.rfind(",") > s.rfind(".") else "."
        s = s.replace("." if decimal_mark == "," else ",", "").replace(",", ".")
    elif "," in s:
        s = s.replace(",", "") if s.count(",") > 1 else s.replace(",", ".")
    elif re.fullmatch(r"\d{1,3}(?:\.\d{3})+", s):
        s = s.replace(".", "")  # German thousands: "12.000"
    elif s.count(".") > 1:
        return None  # a date such as 1.1.2022, not a quantity
    try:
        return Decimal(s)
    except InvalidOperation:
        return None


def numbers_in(text: str) -> set[str]:
    """Quantities with a unit, normalized: {"1.75 %", "0.25 %", "12000 EUR", "14 days"}.

    Only numbers with a unit count, so section references ("§ 2 Abs. 1"), dates and years
    do not look like values; "0,25 %", "0,25 Prozent" and "0.25 percent" are one value.
    """
    found = set()
    for m in _QUANTITY.finditer(text):
        raw, unit = (m["n1"], m["pre"]) if m["n1"] else (m["n2"], m["unit"])
        value = _decimal(raw)
        if value is None:
            continue
        found.add(f"{format(value.normalize(), 'f')} {_unit(unit)}")
    return found


