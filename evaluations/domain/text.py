"""Text the platform stores or shows to other people: the same rules on SQLite and PostgreSQL.

PostgreSQL cannot store NUL (U+0000) in ``text`` or ``jsonb`` (SQLite can), so text that users send is refused with
the JSON path of the field and text the platform itself records (server output, error messages, transcripts) has
its NULs replaced. Names, tags and labels reach other members' terminals through the CLI, so C0 control characters
(other than tab and newline) and bidirectional overrides are refused there: ANSI escapes or a right-to-left
override could make one string look like another.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["display_text_problem", "folded", "nul_free", "quoted", "storable_text_problem"]

#: C0 controls except tab (U+0009) and newline (U+000A), DEL, and the bidi embedding/override/isolate controls.
_DISPLAY_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
REPLACEMENT = "\ufffd"


def storable_text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored on every supported database (a NUL character), or None."""
    if "\x00" in text:
        return "contains a NUL character (\\u0000), which the database cannot store"
    return None


def display_text_problem(text: str) -> str | None:
    """Why ``text`` may not be a name, tag or label other members see (control characters, bidi overrides), or None."""
    match = _DISPLAY_UNSAFE.search(text)
    if match is None:
        return None
    return (f"contains the control character U+{ord(match.group()):04X}; names, tags and labels may hold printable "
            "text, tabs and newlines only")


_QUOTE_ESCAPES = re.compile("[\x00-\x1f\x7f\u202a-\u202e\u2066-\u2069\"\\\\]")


def quoted(text: str, limit: int = 100) -> str:
    """``text`` in double quotes for a message other members read: at most ``limit`` characters (then "…"), with
    quotes, backslashes, every control character (newlines included) and bidi controls written as escapes
    (``\\"``, ``\\\\``, ``\\u000a``, ``\\u202e``), so a key cannot end the quote early, break the line or reorder it."""
    cut = text if len(text) <= limit else text[:limit] + "…"
    return '"' + _QUOTE_ESCAPES.sub(lambda m: "\\" + m.group() if m.group() in '"\\' else f"\\u{ord(m.group()):04x}", cut) + '"'


def nul_free(value):
    """``value`` with every NUL in its strings (and dict keys, recursively through lists and dicts) replaced by U+FFFD,
    for text the platform records itself (server output, exception messages, transcripts)."""
    if isinstance(value, str):
        return value.replace("\x00", REPLACEMENT) if "\x00" in value else value
    if isinstance(value, dict):
        return {nul_free(k): nul_free(v) for k, v in value.items()}
    if isinstance(value, list):
        return [nul_free(v) for v in value]
    return value


def folded(text: str) -> str:
    """``text`` as case-insensitive search compares it: Unicode's compatibility caseless matching (Unicode §3.13,
    D146: NFKD(casefold(NFKD(casefold(NFD(text)))))), stored composed (NFC). Full case folding, the same in every script and on every database (the platform folds, not the
    database: SQLite's LIKE folds ASCII only, PostgreSQL's ILIKE and lower() follow the server's locale).

    ``Импорт`` → ``импорт``, ``ΣΟΦΟΣ`` and ``σοφος`` (final sigma) → ``σοφοσ``, ``Straße`` → ``strasse``, ``É`` →
    ``é`` (accents stay: ``e`` does not find ``é``), full-width ``ＡＢＣ`` → ``abc``, CJK unchanged; Turkish ``İ`` →
    ``i̇`` (i + combining dot) and ``ı`` stays ``ı`` (Unicode's default folding, not Turkish-specific rules)."""
    nfkd = unicodedata.normalize
    return nfkd("NFC", nfkd("NFKD", nfkd("NFKD", nfkd("NFD", text).casefold()).casefold()))
