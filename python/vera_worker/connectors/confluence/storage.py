"""Confluence's storage format (XHTML with `ac:` and `ri:` elements) to
Markdown, by markdownify (a maintained HTML-to-Markdown converter on
BeautifulSoup). Before converting: scripts and styles are removed, a macro's
parameters (a code block's language, a panel's colour) are dropped rather than
read as text, a link to another page reads as that page's title and an
attachment's image as its file name."""

from __future__ import annotations

from bs4 import BeautifulSoup
from markdownify import MarkdownConverter

_DROPPED = ["script", "style", "ac:parameter", "ac:placeholder"]
# converts the parsed page itself: markdownify(str(soup)) would serialise and parse it again
_CONVERTER = MarkdownConverter(heading_style="ATX", bullets="-", strip=["img"])


def storage_markdown(xhtml: str) -> str:
    """The page's body as Markdown (ATX headings, `-` bullets), with runs of blank lines folded."""
    soup = BeautifulSoup(xhtml, "html.parser")
    for element in soup.find_all(_DROPPED):
        element.decompose()
    for page in soup.find_all("ri:page"):
        page.replace_with(str(page.get("ri:content-title") or ""))
    for attachment in soup.find_all("ri:attachment"):
        attachment.replace_with(str(attachment.get("ri:filename") or ""))
    text = _CONVERTER.convert_soup(soup)
    lines = [line.rstrip() for line in text.splitlines()]
    folded: list[str] = []
    for line in lines:
        if line or (folded and folded[-1]):
            folded.append(line)
    return "\n".join(folded).strip()
