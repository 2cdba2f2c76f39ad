"""Whether the query vector can help: an embedding model knows some
languages; a query in another one gets a confidently wrong vector (all-MiniLM-L6-v2
strips Vietnamese diacritics, and its Vietnamese vectors land on the wrong
paragraphs), and fusing that vector in drags the lexical leg down: on
XQuAD vi -> vi, hybrid hit@1 0.731 against full text's 0.815 (docs/quality.md).
So a query the pinned model cannot read is searched by its words alone."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection

# Marks that, among Latin scripts, Vietnamese alone uses (seen after NFD):
# hook above (ả), dot below (ạ), horn (ơ, ư). Acute, grave and tilde are
# shared with French, Spanish or Portuguese; breve (ă) and đ with Romanian
# and Serbian ("CS Aerostar Bacău", "Novak Đoković"), so those two count
# only beside a tone mark on a vowel (vera-search/11).
_VIETNAMESE_MARKS = re.compile("[\u0309\u0323\u031b]")
_BREVE_OR_D = re.compile("[\u0306đĐ]")
_TONE_ON_VOWEL = re.compile("[aeiouyAEIOUY][\u0302\u0306]?[\u0300\u0301\u0303]")

# An English query may name a café or Zoë; a query in another language is
# full of letters outside ASCII.
_ENGLISH_BELOW = 0.3
_OTHER_FROM = 0.5


def query_language(text: str) -> str:
    """'vi' for Vietnamese, 'other' for text mostly outside ASCII, else 'en' (English or not known)."""
    words = [word for word in text.split() if any(ch.isalpha() for ch in word)]
    if not words:
        return "en"
    foreign = [w for w in words if any(ch.isalpha() and not ch.isascii() for ch in w)]
    share = len(foreign) / len(words)
    if share < _ENGLISH_BELOW:
        return "en"
    marked = unicodedata.normalize("NFD", " ".join(foreign))
    if _VIETNAMESE_MARKS.search(marked) or (_BREVE_OR_D.search(marked) and _TONE_ON_VOWEL.search(marked)):
        return "vi"
    return "other" if share >= _OTHER_FROM else "en"


def model_reads(languages: Collection[str] | None, text: str) -> bool:
    """Whether a model of these languages (None: multilingual or not known) can embed the query."""
    return languages is None or query_language(text) in languages
