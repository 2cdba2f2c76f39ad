"""A file's bytes to text: UTF-8 (with or without a byte-order mark), UTF-16
and UTF-32 by their mark, and anything else (cp1252, latin-1, ...) by charset
detection, with a warning that says which encoding was assumed, so that an
export saved by a spreadsheet is read rather than refused, and the guess is
never silent."""

from __future__ import annotations

import codecs

import charset_normalizer

from vera_worker.domain.records import RecordFormatError

# longest first: a UTF-32 little-endian mark starts with the UTF-16 one
_MARKS = (
    (codecs.BOM_UTF32_LE, "utf-32", "UTF-32"),
    (codecs.BOM_UTF32_BE, "utf-32", "UTF-32"),
    (codecs.BOM_UTF8, "utf-8-sig", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16", "UTF-16"),
    (codecs.BOM_UTF16_BE, "utf-16", "UTF-16"),
)


def decode_text(name: str, data: bytes) -> tuple[str, tuple[str, ...]]:
    """The text of a file and the warnings its reading earned (an assumed encoding)."""
    for mark, encoding, shown in _MARKS:
        if data.startswith(mark):
            try:
                return data.decode(encoding), ()
            except UnicodeDecodeError as exc:
                raise RecordFormatError(
                    f"{name}: starts with a {shown} byte-order mark but is not {shown} "
                    f"(byte {exc.start + (len(mark) if encoding == 'utf-8-sig' else 0)})"
                ) from exc
    try:
        return data.decode("utf-8"), ()
    except UnicodeDecodeError as exc:
        utf8_error = exc
    detected = _detected_encoding(data)
    if detected is None:
        raise RecordFormatError(
            f"{name}: not UTF-8 (byte {utf8_error.start}) and no other text encoding fits"
        ) from utf8_error
    return data.decode(detected), (f"{name}: not UTF-8 (byte {utf8_error.start}); read as {detected}",)


# UTF-16 and UTF-32 without a mark are only considered for bytes that hold NULs (every ASCII
# character has one there); otherwise four bytes of Latin text "decode" as two CJK characters
_WIDE = ("utf_16", "utf_16_be", "utf_16_le", "utf_32", "utf_32_be", "utf_32_le")
# Short Western text fits many single-byte code pages equally well (the detector cannot tell
# cp1250 from cp1252 by "café"); among the equally good fits the usual export encodings win.
_PREFERRED = ("cp1252", "latin_1")


def _detected_encoding(data: bytes) -> str | None:
    matches = list(charset_normalizer.from_bytes(data, cp_exclusion=None if b"\x00" in data else list(_WIDE)))
    if not matches:
        return None
    best = matches[0]
    tied = [m for m in matches if (m.chaos, m.coherence) == (best.chaos, best.coherence)]
    for preferred in _PREFERRED:
        if any(preferred in m.could_be_from_charset for m in tied):
            return codecs.lookup(preferred).name
    return codecs.lookup(best.encoding).name
