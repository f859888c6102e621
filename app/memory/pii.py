"""Deterministic PII masking for agent memories (SPEC §7).

:func:`mask_pii` replaces personal data with placeholders ``[KIND_n]`` before anything is
stored or indexed. ``KIND`` is one of :data:`KINDS`; ``n`` counts distinct values of that kind
in order of first appearance in the text (the same value twice, however written, gets the same
placeholder). The output depends only on the input text: same text → same masked text.

Detection runs on the *folded* text (:func:`fold`, same length as the input): any Unicode
decimal digit (full-width ``１２３``, Arabic-Indic …) becomes ASCII, full-width letters and
punctuation become ASCII, no-break/thin/ideographic spaces become a space, Unicode hyphens and
dashes (and ``ー`` between digits) become ``-``. Word boundaries are ASCII: a number glued to
Chinese, Japanese or Hebrew letters (``身份证号码11010519491231002X``) is still found.
Then once more on its *compact* form (:func:`app.memory.pii_text.compact`: spaced separators
``536 - 22 - 1234``, ``4111 – 1111``, ``536  22  1234`` and invisible characters squeezed to
what the detectors read, ``536-22-1234``): a value written with spaced separators is masked
exactly when its compact form is, as the same kind. The first pass's spans stay (a compact
form can glue a value to the next number: ``… 1111 - 12/27``); a second-pass span is added
where it overlaps none of them, or replaces the ones it covers whole (a part found first).

Detectors, applied in this order; a later detector never touches an earlier one's span:

1. ``EMAIL``: ``local@domain.tld`` (RFC 5322 "dot-atom" subset).
2. ``IP``: IPv4/IPv6 host addresses (:mod:`app.memory.pii_ids` lists what is not).
3. Protected, never masked (identifiers, not personal data): UUIDs, ``0x…`` hex literals,
   hashes (32+ hex characters with a letter: MD5, SHA-1, SHA-256), and ISBNs with a valid
   check digit that are labelled ``ISBN`` or written ``978-…``/``979-…`` with hyphens (a bare
   13-digit run is still masked, as any run of 10+ digits).
4. ``IBAN``: country code + 2 check digits + 11–30 letters/digits, any case, grouped by
   spaces or hyphens, valid per ``stdnum.iban`` (ISO 13616 mod-97; the longest valid prefix
   that ends a group, so following words stay); or, right after the word "IBAN", that shape
   with a wrong check (the country's IBAN length decides where it ends).
5. National ids with their check digits (``CN_ID``, ``MY_NUMBER``, ``IN_AADHAAR``, ``TW_ID``,
   ``HK_ID``, ``UK_NINO``, ``US_SSN``, ``CA_SIN``, ``AU_TFN``, ``UK_NHS``, ``IL_ID``; see
   :mod:`app.memory.pii_ids`): a valid id comes before phones, cards and bank accounts
   unless a phone or banking word is the nearest cue before it; then it comes after them
   (step 9b), so a value no phone or bank detector takes is still masked as that id.
6. ``BANK_ACCOUNT``: 6–20 digits (dashes/spaces allowed) within 25 characters after a
   banking keyword (account, acct, a/c, routing, sort code, bank, konto, ``חשבון``, ``口座``,
   ``账户``/``帳戶``), which runs *before* cards and phones (the keyword decides).
7. ``CARD``: 13–19 digits, optionally grouped by spaces, dots, dashes, underscores or slashes,
   not starting with ``+`` or ``00`` (international phone prefixes), in groups of 2–6 digits
   (``1 2 3 … 12`` is a list, ``1699999999.123`` a timestamp) and not thousands-grouped
   (``1 000 000 000 000``). Luhn validity is *not* required (SPEC: "Luhn-valid or not").
8. ``PHONE``: ``phonenumbers.PhoneNumberMatcher`` (Google libphonenumber) with leniency VALID
   for regions IL, GB, US, DE, FR, JP, IN, AU (national formats such as ``052-123-4567``,
   ``020 7946 0958``, ``(415) 555-2671``); plus own rules where the metadata refuses numbers
   (unallocated or fictional ranges): ``+``/``00`` followed by 8–15 digits in groups, Israeli
   mobile ``05X-XXX-XXXX``, North-American ``XXX-XXX-XXXX`` and Chinese mobile ``1XX XXXX XXXX``.
9. ``BANK_ACCOUNT``: Israeli ``BB-BBB-AAAAAA`` (bank-branch-account) shapes; then (9b) the
   national ids deferred by a phone or banking cue word.
10. ``NUMBER``: any remaining run of 10 or more digits, also across one repeated separator
    (``1234 5678 9012``, ``98765-43210-99``, ``1234.5678.9012``; a checksum-invalid id lands
    here), except thousands-grouped quantities (``12 345 678 901``, ``1.234.567.890``),
    decimals (one dot), lists of years and lists whose inner groups have fewer than 3 digits
    (``85 90 78 92 88``, ``10.0.19041.1``).

Left alone on purpose (the false-positive set in ``tests/unit/memory/pii_cases.py``): dates
(``2024-01-15``, ``15/01/2024``, ``15.01.2024``, ``２０２４年１月１５日``), times, prices
(``$1,299.99``), versions (``3.11.4``, ``version 1.2.3.4``), short ids (``ORD-5521``), numbers
under 10 digits without an id's check digit (``order 123456789``), years and ranges,
coordinates, digit groups with thousands separators, ISBNs as above, loopback/unspecified
addresses and netmasks. Measured with ``python -m bench.pii``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cairn.app.memory.pii_ids import BANK_WORDS, ip_spans, national_id_spans
from cairn.app.memory.pii_text import compact, fold

KINDS = (
    "EMAIL",
    "IBAN",
    "CARD",
    "PHONE",
    "IL_ID",
    "BANK_ACCOUNT",
    "NUMBER",
    "IP",
    "MY_NUMBER",
    "CN_ID",
    "TW_ID",
    "HK_ID",
    "US_SSN",
    "UK_NINO",
    "UK_NHS",
    "CA_SIN",
    "AU_TFN",
    "IN_AADHAAR",
)
"""Every placeholder kind :func:`mask_pii` produces."""

PLACEHOLDER_RE = re.compile(rf"\[({'|'.join(KINDS)})_\d+\]")
"""Matches one placeholder produced by :func:`mask_pii`."""

_A = re.ASCII
_EMAIL = re.compile(r"(?<![\w.+-])[\w.!#$%&'*+/=?^`{|}~-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}(?![\w-])")
_IBAN = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z]{2}\d{2}(?:[ -]?[A-Za-z0-9]){11,32}", _A)
_IBAN_KEYWORD = re.compile(r"IBAN[:\s#]*$", re.IGNORECASE)
_CARD = re.compile(r"(?<![\w+.,/-])(?!00)\d(?:[ ._/-]{0,2}\d){12,18}(?![\w.,/-]?\d)", _A)
_THOUSANDS = re.compile(r"\d{1,3}([ .,'])\d{3}(?:\1\d{3})*")
_INTL_PHONE = re.compile(r"(?<![\w+])(?:\+|00)\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){2,6}(?![\w.-]?\d)", _A)
_IL_MOBILE = re.compile(r"(?<![\w.-])05\d[ -]?\d{3}[ -]?\d{4}(?![\w.-]?\d)", _A)
_NANP = re.compile(
    r"(?<![\w.-])(?:1[-. ])?(?:\(\d{3}\) ?|\d{3}[-. ])\d{3}[-. ]\d{4}"
    r"(?:\s?(?:x|ext\.?)\s?\d{1,5})?(?![\w.-]?\d)",
    _A,
)
_CN_MOBILE = re.compile(r"(?<![\w.+-])1[3-9]\d([ -]?)\d{4}\1\d{4}(?![\w]|[.-]?\d)", _A)
_IL_BANK = re.compile(r"(?<![\w.-])\d{2}-\d{3}-\d{4,9}(?![\w.-]?\d)", _A)
_BANK_KEYWORD = re.compile(rf"(?:{BANK_WORDS})[^\d\n]{{0,25}}?(\d[\d -]{{4,24}}\d)(?![\w.-]?\d)", re.IGNORECASE | _A)
_DIGITS10 = re.compile(r"\d{10,}", _A)
_GROUPED = re.compile(r"(?<![\w.,/:+-])(?<!\d[ .-])\d+([ .-])\d+(?:\1\d+)*(?![\w]|[.,/:-]?\d)", _A)
_PROTECTED = re.compile(
    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b0x[0-9a-f]+\b"
    r"|\b(?=[0-9]*[a-f])[0-9a-f]{32,}\b",
    re.IGNORECASE | _A,
)
_ISBN = re.compile(
    r"\bISBN(?:-1[03])?:?\s*((?:\d[ -]?){9,12}[\dX])(?![\w-])"
    r"|(?<![\w-])(97[89]-\d{1,5}-\d{1,7}-\d{1,7}-\d)(?![\w-])",
    re.IGNORECASE | _A,
)
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


def _alnum(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


def _free(taken: list[tuple[int, int]], start: int, end: int) -> bool:
    return all(end <= a or start >= b for a, b in taken)


def _iban_length(country: str) -> int | None:
    from stdnum import numdb

    bban = numdb.get("iban").info(country)[0][1].get("bban")
    return 4 + sum(int(n) for n in re.findall(r"(\d+)!", bban)) if bban else None


def _iban_spans(text: str) -> list[tuple[int, int, str]]:
    from stdnum import iban

    out = []
    pos = 0
    while m := _IBAN.search(text, pos):
        ends = [m.start() + i + 1 for i, ch in enumerate(m.group(0)) if _alnum(ch)]
        compact = "".join(ch for ch in m.group(0) if _alnum(ch)).upper()
        # candidate lengths: prefixes that end a group (the next character is not a letter/digit)
        lengths = [n for n in range(len(compact), 14, -1) if not _alnum(text[ends[n - 1] : ends[n - 1] + 1] or " ")]
        hit = next((n for n in lengths if iban.is_valid(compact[:n])), None)
        if hit is None and _IBAN_KEYWORD.search(text, max(0, m.start() - 8), m.start()):
            want = _iban_length(compact[:2])
            groups = list(zip(lengths, [*lengths[1:], 4]))
            hit = (
                want
                if want in lengths
                else next((n for n, prev in groups if any(c.isdigit() for c in compact[prev:n])), None)
            )
        if hit is None:
            pos = m.start() + 1
            continue
        out.append((m.start(), ends[hit - 1], "IBAN"))
        pos = ends[hit - 1]
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
    for rx in (_INTL_PHONE, _IL_MOBILE, _NANP, _CN_MOBILE):
        for m in rx.finditer(text):
            digits = _digits(m.group(0))
            if rx is _INTL_PHONE and not 8 <= len(digits.lstrip("0")) <= 15:
                continue
            out.append((m.start(), m.end(), "PHONE"))
    return out


def _bank_keyword_spans(text: str) -> list[tuple[int, int, str]]:
    out = []
    for m in _BANK_KEYWORD.finditer(text):
        if 6 <= len(_digits(m.group(1))) <= 20:
            out.append((m.start(1), m.end(1), "BANK_ACCOUNT"))
    return out


def _card_spans(text: str) -> list[tuple[int, int, str]]:
    return [
        (m.start(), m.end(), "CARD")
        for m in _CARD.finditer(text)
        if not _THOUSANDS.fullmatch(m.group(0)) and _card_groups(re.split(r"[ ._/-]+", m.group(0)))
    ]


def _card_groups(groups: list[str]) -> bool:
    """Card numbers are written in groups of 2–6 digits (4-4-4-4, Amex 4-6-5), or in one."""
    return len(groups) == 1 or all(2 <= len(g) <= 6 for g in groups)


def _number_spans(text: str) -> list[tuple[int, int, str]]:
    out = [(m.start(), m.end(), "NUMBER") for m in _DIGITS10.finditer(text)]
    for m in _GROUPED.finditer(text):
        groups = m.group(0).split(m.group(1))
        if (
            sum(map(len, groups)) < 10
            or (m.group(1) == "." and len(groups) < 3)  # a decimal
            or (m.group(1) in " ." and len(groups[0]) <= 3 and all(len(g) == 3 for g in groups[1:]))
            or all(len(g) == 4 and 1900 <= int(g) <= 2099 for g in groups)
            or min(len(groups[0]), len(groups[-1])) < 2
            or any(len(g) < 3 for g in groups[1:-1])
        ):
            continue
        out.append((m.start(), m.end(), "NUMBER"))
    return out


def _protected_spans(text: str) -> list[tuple[int, int]]:
    from stdnum import isbn

    out = [(m.start(), m.end()) for m in _PROTECTED.finditer(text)]
    for m in _ISBN.finditer(text):
        group = 1 if m.group(1) else 2
        if isbn.is_valid(m.group(group)):
            out.append((m.start(group), m.end(group)))
    return out


def _detect(text: str) -> list[tuple[int, int, str]]:
    """The detectors of the module doc over one (folded) text, in their order."""
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, int, str]] = []

    def accept(spans: list[tuple[int, int, str]]) -> None:
        for start, end, kind in sorted(spans, key=lambda s: (s[0], -(s[1] - s[0]))):
            if _free(taken, start, end):
                taken.append((start, end))
                found.append((start, end, kind))

    accept([(m.start(), m.end(), "EMAIL") for m in _EMAIL.finditer(text)])
    if not any(c.isdigit() for c in text):
        return found
    accept(ip_spans(text))
    if sum(c.isdigit() for c in text) < 6:
        return found
    taken.extend(_protected_spans(text))
    accept(_iban_spans(text))
    ids, deferred_ids = national_id_spans(text)
    for spans in ids:
        accept(spans)
    accept(_bank_keyword_spans(text))
    accept(_card_spans(text))
    accept(_phone_spans(text))
    accept([(m.start(), m.end(), "BANK_ACCOUNT") for m in _IL_BANK.finditer(text)])
    accept(deferred_ids)
    accept(_number_spans(text))
    return found


def find_pii(text: str) -> list[tuple[int, int, str]]:
    """Spans of personal data in ``text`` as ``(start, end, kind)``, sorted by start.

    Offsets index ``text`` itself (detection runs on :func:`fold` of it, which keeps
    offsets, then on its compact form, mapped back). Detectors run in the order of the module
    doc; overlapping later spans are dropped (an earlier detector wins; among one detector's
    overlapping spans the longest wins).
    """
    folded = fold(text)
    found = _detect(folded)
    squeezed, offsets = compact(folded)
    if squeezed == folded:
        return sorted(found)
    for s, e, kind in _detect(squeezed):
        start, end = offsets[s], offsets[e - 1] + 1
        inside = [f for f in found if f[0] < end and start < f[1]]
        if all(start <= a and b <= end for a, b, _ in inside):
            found = [f for f in found if f not in inside] + [(start, end, kind)]
    return sorted(found)


def _normal(kind: str, value: str) -> str:
    """The identity of a masked value for numbering (same value, however written → same key)."""
    if kind == "EMAIL":
        return value.lower()
    if kind == "IP":
        import ipaddress

        try:
            return str(ipaddress.ip_interface(value))
        except ValueError:  # not reached for spans of ip_spans; kept total
            return value.lower()
    if kind in ("PHONE", "CARD", "NUMBER", "BANK_ACCOUNT", "IL_ID"):
        return _digits(value)
    return re.sub(r"[^0-9A-Z]", "", value.upper())


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
    folded = fold(text)
    numbering: dict[tuple[str, str], str] = {}
    counts: dict[str, int] = {}
    parts: list[str] = []
    pos = 0
    for start, end, kind in spans:
        key = (kind, _normal(kind, compact(folded[start:end])[0]))
        placeholder = numbering.get(key)
        if placeholder is None:
            counts[kind] = counts.get(kind, 0) + 1
            placeholder = numbering[key] = f"[{kind}_{counts[kind]}]"
        parts.append(text[pos:start])
        parts.append(placeholder)
        pos = end
    parts.append(text[pos:])
    return Masked("".join(parts), counts)


def only_placeholders(masked_text: str) -> bool:
    """True when nothing but placeholders, punctuation and whitespace remains."""
    rest = PLACEHOLDER_RE.sub("", masked_text)
    return not any(ch.isalnum() for ch in rest)
