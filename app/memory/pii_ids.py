"""National identity numbers and IP addresses for the memory PII masker.

Part of :mod:`app.memory.pii` (which documents the order of all detectors). Every
function here takes the *folded* text (:func:`app.memory.pii.fold`: same length as the
input, digits ASCII, full-width forms, Unicode spaces and dashes replaced) and returns spans
``(start, end, kind)``.

National ids of the product's languages (SPEC §7 names Israeli ids; the others are the same
kind of data for the Japanese, Chinese and English-speaking users the product serves), each
checked by its check digit where it has one:

=============  ==========================================  =====================================
kind           shapes                                      check
=============  ==========================================  =====================================
``CN_ID``      PRC resident id, 17 digits + digit/``X``,   ``stdnum.cn.ric`` (ISO 7064 mod 11-2,
               contiguous or 6-8-4 / 6-4-4-4 groups        birth date, region)
``MY_NUMBER``  Japanese Individual Number, 12 digits,      ``stdnum.jp.in_`` (mod 11)
               contiguous or 4-4-4
``IN_AADHAAR`` 12 digits, contiguous or 4-4-4; before      ``stdnum.in_.aadhaar`` (Verhoeff)
               ``MY_NUMBER`` when "Aadhaar"/"आधार" is near
``TW_ID``      Taiwan id / resident certificate            published algorithm (own code: no
               ``A123456789`` (2nd char 1, 2, 8 or 9)      library has it)
``HK_ID``      Hong Kong id ``A123456(3)``, ``AB987654(3)`` published mod 11 (own code)
``UK_NINO``    ``AB 12 34 56 C``; ``AB123456C`` only after   no check digit; shape + HMRC prefix
               "NINO"/"NI"/"national insurance"            rules
``US_SSN``     ``536-90-4399`` / ``536 90 4399``; 9 digits  ``stdnum.us.ssn`` (area, group, serial,
               only after "SSN"/"social security"          known fakes)
``CA_SIN``     after "SIN"/"social insurance"              ``stdnum.ca.sin`` (Luhn)
``AU_TFN``     after "TFN"/"tax file"                      ``stdnum.au.tfn`` (weighted mod 11)
``UK_NHS``     after "NHS"                                 ``stdnum.gb.nhs`` (mod 11)
``IL_ID``      9 digits or ``12345678-9``; 6–8 digits      ``stdnum.il.idnr`` (Luhn)
               only after "ת.ז"/"ת״ז"/"זהות"/"zehut"
=============  ==========================================  =====================================

A valid id is an id, not a phone number or a bank account (``039337423`` is also a Tel Aviv
phone number): an id is taken *before* phones, cards and bank accounts unless the nearest cue
word in the 30 characters before it is a phone word (tel, phone, call, טלפון, 電話, 电话 …) or
a banking word (account, bank, חשבון, 口座 …), which then decides. Nine-digit Luhn numbers are
Israeli ids unless a SIN/TFN/SSN word says otherwise. An id whose check fails is not an id; if it
has 10+ digits it is still masked as ``NUMBER``.

``IP``: IPv4 dotted quads (optionally ``/prefix``) and IPv6 in every form the ``ipaddress``
module accepts (compressed, IPv4-mapped ``::ffff:192.0.2.1``, zone ``%eth0``). Not masked: the
unspecified and loopback addresses and netmasks (``0.0.0.0``, ``127.0.0.1``, ``::``, ``::1``,
``255.255.255.0``), which name no host; a dotted quad labelled as a version (``v1.2.3.4``,
``version``/``release``/``build`` before it, ``-beta`` after it); IPv6-looking tokens without a
digit (``A::B``).
"""

from __future__ import annotations

import importlib
import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass

BANK_WORDS = (
    r"account|acct|a/c|routing|sort[- ]code|bank|kontonummer|konto|compte|cuenta|חשבון|口座|账户"
    r"|帳戶"
)
"""Regex alternatives of the banking cue words (shared with the BANK_ACCOUNT detector)."""

_CUE = re.compile(
    rf"(?P<bank>{BANK_WORDS})"
    r"|(?P<phone>\b(?:tel|phone|telephone|call|mobile|cell|fax|whats ?app|sms)\b|טלפון|נייד|電話|携帯|电话|手机|手機)"
    r"|(?P<id>\b(?:id|identity|ssn|sin|nas|tfn|nhs|nino|ni|hkid|aadhaa?r|uidai|passport)\b"
    r"|social (?:security|insurance)|assurance sociale|tax file|national insurance|ת[.\"'״׳]?ז|זהות|zehut"
    r"|身份证|身分證|身份證|居留證|マイナンバー|個人番号|आधार)",
    re.IGNORECASE | re.ASCII,
)
_WINDOW = 30
# not inside a Latin word or a longer group of digits (CJK and Hebrew letters are boundaries)
_B = r"(?<![A-Za-z0-9_])(?<!\d[ .-])"
_E = r"(?![A-Za-z0-9_]|[ .-]\d)"
_G444 = re.compile(_B + r"\d{4}([ .-]?)\d{4}\1\d{4}" + _E, re.ASCII)
_G333 = re.compile(_B + r"\d{3}([ .-]?)\d{3}\1\d{3}" + _E, re.ASCII)


def _stdnum(module: str) -> Callable[[str], bool]:
    def valid(value: str) -> bool:
        return importlib.import_module(f"stdnum.{module}").is_valid(value)

    return valid


_TW_LETTERS = "ABCDEFGHJKLMNPQRSTUVXYWZIO"  # A=10 … Z=33, I=34, O=35 (Taiwan Ministry of the Interior)


def _tw_valid(value: str) -> bool:
    """Taiwan id: letter code (2 digits) then 9 digits, weights 1,9,8,…,1,1; sum ≡ 0 (mod 10)."""
    code = _TW_LETTERS.index(value[0]) + 10
    digits = [code // 10, code % 10, *map(int, value[1:])]
    return sum(d * w for d, w in zip(digits, (1, 9, 8, 7, 6, 5, 4, 3, 2, 1, 1))) % 10 == 0


def _hk_valid(value: str) -> bool:
    """Hong Kong id: letters A=10…Z=35 (space=36 pads one-letter prefixes), 6 digits, check
    digit or A (=10); weights 9…1 over the padded 9 characters; sum ≡ 0 (mod 11)."""
    body = value.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    letters = value[: len(value) - len(body)]
    vals = ([36] if len(letters) == 1 else []) + [ord(c) - 55 for c in letters]
    vals += [int(c) for c in body[:6]] + [10 if body[6] == "A" else int(body[6])]
    return len(vals) == 9 and sum(v * w for v, w in zip(vals, range(9, 0, -1))) % 11 == 0


_NINO = r"[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]"  # HMRC letters
_NINO_BAD = {"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"}


def _nino_valid(value: str) -> bool:
    return value[:2] not in _NINO_BAD


@dataclass(frozen=True)
class _Rule:
    kind: str
    shape: re.Pattern
    valid: Callable[[str], bool]  # gets the value upper-cased, separators and brackets removed
    keyword: re.Pattern | None = None  # must match the nearest cue word before the value


def _kw(words: str) -> re.Pattern:
    return re.compile(words, re.IGNORECASE | re.ASCII)


_RULES = (
    _Rule("CN_ID", re.compile(_B + r"\d{6}([ .-]?)\d{4}[ .-]?\d{4}\1\d{3}[0-9Xx]" + _E, re.ASCII), _stdnum("cn.ric")),
    _Rule("IN_AADHAAR", _G444, _stdnum("in_.aadhaar"), _kw(r"aadhaa?r|आधार|uidai")),
    _Rule("MY_NUMBER", _G444, _stdnum("jp.in_")),
    _Rule("IN_AADHAAR", _G444, _stdnum("in_.aadhaar")),
    _Rule("TW_ID", re.compile(_B + r"[A-Z][1289]\d{8}" + _E, re.ASCII), _tw_valid),
    _Rule("HK_ID", re.compile(_B + r"[A-Z]{1,2}\d{6}(?: ?\([0-9A]\)|[0-9A]" + _E + ")", re.ASCII), _hk_valid),
    _Rule("UK_NINO", re.compile(_B + _NINO.replace(" ?", " ") + _E, re.ASCII), _nino_valid),
    _Rule("UK_NINO", re.compile(_B + _NINO + _E, re.ASCII), _nino_valid, _kw(r"\bnino\b|\bni\b|national insurance")),
    _Rule("US_SSN", re.compile(_B + r"\d{3}([ .-])\d{2}\1\d{4}" + _E, re.ASCII), _stdnum("us.ssn")),
    _Rule("US_SSN", re.compile(_B + r"\d{9}" + _E, re.ASCII), _stdnum("us.ssn"), _kw(r"\bssn\b|social security")),
    _Rule("CA_SIN", _G333, _stdnum("ca.sin"), _kw(r"\b(?:sin|nas)\b|social insurance|assurance sociale")),
    _Rule(
        "AU_TFN",
        re.compile(_B + r"\d{3}([ .-]?)\d{3}\1\d{2,3}" + _E, re.ASCII),
        _stdnum("au.tfn"),
        _kw(r"\btfn\b|tax file"),
    ),
    _Rule("UK_NHS", re.compile(_B + r"\d{3}([ .-]?)\d{3}\1\d{4}" + _E, re.ASCII), _stdnum("gb.nhs"), _kw(r"\bnhs\b")),
    _Rule("IL_ID", re.compile(_B + r"\d{5,8}-?\d" + _E, re.ASCII), _stdnum("il.idnr"), _kw(r"ת[.\"'״׳]?ז|זהות|zehut")),
    _Rule("IL_ID", re.compile(r"(?<![\w.,/-])\d{8}-?\d(?![\w.,/-]?\d)", re.ASCII), _stdnum("il.idnr")),
)


def _nearest_cue(text: str, start: int) -> re.Match | None:
    cues = list(_CUE.finditer(text, max(0, start - _WINDOW), start))
    return cues[-1] if cues else None


def national_id_spans(text: str) -> tuple[list[list[tuple[int, int, str]]], list[tuple[int, int, str]]]:
    """Checksum-valid national ids in ``text`` (folded).

    Returns ``(first, deferred)``: ``first`` holds one list of spans per rule in precedence
    order, to be taken before bank accounts, cards and phones; ``deferred`` the valid ids whose
    nearest cue word (30 characters before) is a banking or phone word, to be taken only if
    those detectors leave them (``tel 536-90-4399`` is no phone number, so it is still an
    SSN). A rule that needs a keyword (SSN, SIN …) takes a value only when its nearest cue is
    that keyword. 17 digits + ``X`` failing the PRC check is a ``NUMBER`` (the ``X`` included).
    """
    first: list[list[tuple[int, int, str]]] = []
    deferred: list[tuple[int, int, str]] = []
    for rule in _RULES:
        spans = []
        for m in rule.shape.finditer(text):
            value = re.sub(r"[^0-9A-Z]", "", m.group(0).upper())
            cue = _nearest_cue(text, m.start())
            if rule.keyword is not None and (cue is None or not rule.keyword.search(cue.group(0))):
                continue
            if not rule.valid(value):
                if rule.kind == "CN_ID" and value.endswith("X"):
                    spans.append((m.start(), m.end(), "NUMBER"))
                continue
            (deferred if cue is not None and cue.lastgroup != "id" else spans).append((m.start(), m.end(), rule.kind))
        first.append(spans)
    return first, deferred


_V4 = re.compile(
    r"(?<![A-Za-z0-9_.])(\d{1,3}(?:\.\d{1,3}){3})(/\d{1,2}(?!\d))?(?![A-Za-z0-9_]|\.\d|-[A-Za-z])", re.ASCII
)
_VERSION_CUE = re.compile(
    r"(?:\bv|version|ver\.?|release|rel\.?|build|rev(?:ision)?\.?|firmware|fw)\s*[-:#]?\s*$", re.IGNORECASE | re.ASCII
)
_V6 = re.compile(
    r"(?<![A-Za-z0-9_:.])(?:[0-9A-Fa-f]{1,4}|(?=:))(?::[0-9A-Fa-f]{0,4}){2,8}(?:\.\d{1,3}){0,3}"
    r"(?:%[A-Za-z0-9_.-]+)?",
    re.ASCII,
)


def _host(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if address.is_unspecified or address.is_loopback:
        return False
    if address.version == 4:
        inverted = ~int(address) & 0xFFFFFFFF
        return inverted & (inverted + 1) != 0  # leading ones then zeros = a netmask
    return True


def ip_spans(text: str) -> list[tuple[int, int, str]]:
    """IPv4 and IPv6 addresses in ``text`` (folded) as ``IP`` spans (see module doc for the
    addresses left alone)."""
    out = []
    address: ipaddress.IPv4Address | ipaddress.IPv6Address
    for m in _V6.finditer(text):
        value = m.group(0)
        if value.endswith(":") and not value.endswith("::"):
            value = value[:-1]
        value = value.rstrip(".")
        end = m.start() + len(value)
        if re.match(r"[A-Za-z0-9_]", text[end : end + 1]) or not any(c.isdigit() for c in value):
            continue
        try:
            address = ipaddress.IPv6Address(value)
        except ValueError:
            continue
        if _host(address):
            out.append((m.start(), end, "IP"))
    for m in _V4.finditer(text):
        if _VERSION_CUE.search(text, max(0, m.start() - 12), m.start()):
            continue
        try:
            address = ipaddress.IPv4Address(m.group(1))
        except ValueError:
            continue
        if _host(address):
            valid_prefix = m.group(2) is not None and int(m.group(2)[1:]) <= 32
            out.append((m.start(), m.end() if valid_prefix else m.end(1), "IP"))
    return out
