"""Deterministic PII masking for agent memories (SPEC §7).

:func:`mask_pii` replaces personal data with placeholders ``[KIND_n]`` before anything is
stored or indexed. ``KIND`` is one of ``EMAIL``, ``IBAN``, ``CARD``, ``PHONE``, ``IL_ID``,
``BANK_ACCOUNT``, ``NUMBER``; ``n`` counts distinct values of that kind in order of first
appearance in the text (the same value twice gets the same placeholder). The output depends
only on the input text: same text → same masked text.

Detectors, applied in this order; a later detector never touches an earlier one's span:

1. ``EMAIL``: ``local@domain.tld`` (RFC 5322 "dot-atom" subset). UUIDs and ``0x…`` hex
   literals are then protected (identifiers, not personal data).
2. ``IBAN``: country code + 2 check digits + 11–30 letters/digits (spaces allowed), valid per
   ``stdnum.iban`` (ISO 13616 mod-97); or any such shape right after the word "IBAN".
3. ``CARD``: 13–19 digits, optionally grouped by spaces, dots or dashes, not starting with
   ``+`` or ``00`` (international phone prefixes). Luhn validity is *not* required (SPEC:
   "Luhn-valid or not"): test numbers, typos and 2-series Mastercard/19-digit cards all mask.
4. ``PHONE``: ``phonenumbers.PhoneNumberMatcher`` (Google libphonenumber) with leniency VALID
   for regions IL, GB, US, DE, FR, JP, IN, AU (national formats such as ``052-123-4567``,
   ``020 7946 0958``, ``(415) 555-2671``); plus own rules where the metadata refuses numbers
   (unallocated or fictional ranges): ``+``/``00`` followed by 8–15 digits in groups, and
   Israeli mobile ``05X-XXX-XXXX`` / North-American ``XXX-XXX-XXXX`` shapes.
5. ``IL_ID``: 9 digits (``12345678-9`` allowed) valid per ``stdnum.il.idnr`` (Luhn check digit).
6. ``BANK_ACCOUNT``: 6–20 digits (dashes/spaces allowed) within 25 characters after a
   banking keyword (account, acct, a/c, routing, sort code, bank, konto, ``חשבון``, ``口座``,
   ``账户``/``帳戶``), which runs *before* cards and phones (the keyword decides); and
   Israeli ``BB-BBB-AAAAAA`` (bank-branch-account) shapes, after phones.
7. ``NUMBER``: any remaining run of 10 or more consecutive digits.

Left alone on purpose (the false-positive set in ``tests/unit/test_memory_pii.py``): dates
(``2024-01-15``, ``15/01/2024``, ``15.01.2024``), times, prices (``$1,299.99``), versions
(``3.11.4``), short ids (``ORD-5521``), years and ranges, IP addresses, digit groups with
thousands separators. Measured with ``python -m bench.pii``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PLACEHOLDER_RE = re.compile(r"\[(EMAIL|IBAN|CARD|PHONE|IL_ID|BANK_ACCOUNT|NUMBER)_\d+\]")
"""Matches one placeholder produced by :func:`mask_pii`."""

KINDS = ("EMAIL", "IBAN", "CARD", "PHONE", "IL_ID", "BANK_ACCOUNT", "NUMBER")

_EMAIL = re.compile(r"(?<![\w.+-])[\w.!#$%&'*+/=?^`{|}~-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}(?![\w-])")
_IBAN = re.compile(r"(?<![A-Za-z0-9])([A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30})(?![A-Za-z0-9])")
_IBAN_KEYWORD = re.compile(r"IBAN[:\s#]*$", re.IGNORECASE)
_CARD = re.compile(r"(?<![\w+.,/-])(?!00)\d(?:[ .\u00a0_/-]{0,2}\d){12,18}(?![\w.,/-]?\d)")
_INTL_PHONE = re.compile(r"(?<![\w+])(?:\+|00)\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){2,6}(?![\w.-]?\d)")
_IL_MOBILE = re.compile(r"(?<![\w.-])05\d[ -]?\d{3}[ -]?\d{4}(?![\w.-]?\d)")
_NANP = re.compile(r"(?<![\w.-])(?:1[-. ])?(?:\(\d{3}\) ?|\d{3}[-. ])\d{3}[-. ]\d{4}"
                   r"(?:\s?(?:x|ext\.?)\s?\d{1,5})?(?![\w.-]?\d)")
_IL_ID = re.compile(r"(?<![\w.,/-])(\d{8}-?\d)(?![\w.,/-]?\d)")
_IL_BANK = re.compile(r"(?<![\w.-])\d{2}-\d{3}-\d{4,9}(?![\w.-]?\d)")
_BANK_KEYWORD = re.compile(
    r"(?:account|acct|a/c|routing|sort[- ]code|bank|kontonummer|konto|compte|cuenta|חשבון|口座|账户|帳戶)"
    r"[^\d\n]{0,25}?(\d[\d -]{4,24}\d)(?![\w.-]?\d)",
    re.IGNORECASE,
)
_DIGITS10 = re.compile(r"\d{10,}")
_PROTECTED = re.compile(
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b0x[0-9a-f]+\b", re.IGNORECASE)
_PHONE_REGIONS = ("IL", "GB", "US", "DE", "FR", "JP", "IN", "AU")


@dataclass(frozen=True)
class Masked:
    """The result of :func:`mask_pii`.

    Attributes:
        text: The input with every detected value replaced by its placeholder.
        counts: Kind → number of *distinct* values masked (kinds with none are absent).
    """

    text: str
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        """True when anything was masked."""
        return bool(self.counts)


def _digits(s: str) -> str:
    return re.sub(r"\D", "", s)


def _free(taken: list[tuple[int, int]], start: int, end: int) -> bool:
    return all(end <= a or start >= b for a, b in taken)


def _iban_spans(text: str, taken: list) -> list[tuple[int, int, str]]:
    from stdnum import iban

    out = []
    for m in _IBAN.finditer(text):
        value = m.group(1).rstrip()
        keyword = _IBAN_KEYWORD.search(text[max(0, m.start() - 8):m.start()])
        if iban.is_valid(value) or keyword:
            out.append((m.start(), m.start() + len(value), "IBAN"))
    return out


def _phone_spans(text: str) -> list[tuple[int, int, str]]:
    import phonenumbers

    out = []
    for region in _PHONE_REGIONS:
        for match in phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.VALID):
            # national numbers must carry their trunk prefix ("0…"): "34.7818" is a valid
            # German subscriber number without it, and a decimal in ordinary prose
            if match.raw_string.lstrip("(").startswith(("+", "0")):
                out.append((match.start, match.end, "PHONE"))
    for rx in (_INTL_PHONE, _IL_MOBILE, _NANP):
        for m in rx.finditer(text):
            digits = _digits(m.group(0))
            if rx is _INTL_PHONE and not 8 <= len(digits.lstrip("0")) <= 15:
                continue
            out.append((m.start(), m.end(), "PHONE"))
    return out


def _il_id_spans(text: str) -> list[tuple[int, int, str]]:
    from stdnum.il import idnr

    return [(m.start(1), m.end(1), "IL_ID") for m in _IL_ID.finditer(text) if idnr.is_valid(m.group(1))]


def _bank_keyword_spans(text: str) -> list[tuple[int, int, str]]:
    out = []
    for m in _BANK_KEYWORD.finditer(text):
        if 6 <= len(_digits(m.group(1))) <= 20:
            out.append((m.start(1), m.end(1), "BANK_ACCOUNT"))
    return out


def find_pii(text: str) -> list[tuple[int, int, str]]:
    """Spans of personal data in ``text`` as ``(start, end, kind)``, sorted by start.

    Detectors run in the order of the module doc; overlapping later spans are dropped (an
    earlier detector wins; among one detector's overlapping spans the longest wins).
    """
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, int, str]] = []

    def accept(spans: list[tuple[int, int, str]]) -> None:
        for start, end, kind in sorted(spans, key=lambda s: (s[0], -(s[1] - s[0]))):
            if _free(taken, start, end):
                taken.append((start, end))
                found.append((start, end, kind))

    accept([(m.start(), m.end(), "EMAIL") for m in _EMAIL.finditer(text)])
    if sum(c.isdigit() for c in text) < 6:
        return sorted(found)
    taken.extend((m.start(), m.end()) for m in _PROTECTED.finditer(text))
    accept(_iban_spans(text, taken))
    accept(_bank_keyword_spans(text))
    accept([(m.start(), m.end(), "CARD") for m in _CARD.finditer(text)])
    accept(_phone_spans(text))
    accept(_il_id_spans(text))
    accept([(m.start(), m.end(), "BANK_ACCOUNT") for m in _IL_BANK.finditer(text)])
    accept([(m.start(), m.end(), "NUMBER") for m in _DIGITS10.finditer(text)])
    return sorted(found)


def mask_pii(text: str) -> Masked:
    """Replace personal data in ``text`` with deterministic placeholders (see module doc).

    Args:
        text: Any text (memory text, namespace, key).

    Returns:
        :class:`Masked` with the masked text and per-kind counts of distinct values.
    """
    spans = find_pii(text)
    if not spans:
        return Masked(text)
    numbering: dict[tuple[str, str], str] = {}
    counts: dict[str, int] = {}
    parts: list[str] = []
    pos = 0
    for start, end, kind in spans:
        value = text[start:end]
        norm = value.lower() if kind == "EMAIL" else (_digits(value) or value).upper()
        if kind == "IBAN":
            norm = value.replace(" ", "").upper()
        placeholder = numbering.get((kind, norm))
        if placeholder is None:
            counts[kind] = counts.get(kind, 0) + 1
            placeholder = numbering[(kind, norm)] = f"[{kind}_{counts[kind]}]"
        parts.append(text[pos:start])
        parts.append(placeholder)
        pos = end
    parts.append(text[pos:])
    return Masked("".join(parts), counts)


def only_placeholders(masked_text: str) -> bool:
    """True when nothing but placeholders, punctuation and whitespace remains."""
    rest = PLACEHOLDER_RE.sub("", masked_text)
    return not any(ch.isalnum() for ch in rest)
