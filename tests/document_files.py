"""Small documents made by the tests: a PDF written by hand (one text line per
page, Helvetica, a correct cross-reference table), DOCX and PPTX through
python-docx and python-pptx, an HTML page with a script and a style."""

from __future__ import annotations

import io


def pdf(pages: list[str], *, title: str | None = None) -> bytes:
    """A PDF whose page N shows pages[N-1] (ASCII, one line)."""
    count = len(pages)
    font = 3 + 2 * count
    info = font + 1
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids ["
        + b" ".join(f"{3 + 2 * i} 0 R".encode() for i in range(count))
        + f"] /Count {count} >>".encode(),
    ]
    for i, text in enumerate(pages):
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = f"BT /F1 12 Tf 72 720 Td ({escaped}) Tj ET".encode()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * i} 0 R "
            f"/Resources << /Font << /F1 {font} 0 R >> >> >>".encode()
        )
        objects.append(f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    objects.append(f"<< /Title ({title or 'untitled'}) >>".encode())
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for offset in offsets:
        out.write(f"{offset:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info {info} 0 R >>\n".encode())
    out.write(f"startxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


def docx(title: str, sections: list[tuple[str, str]]) -> bytes:
    """A Word document: a title, then a heading and a paragraph per section."""
    import docx as python_docx  # noqa: PLC0415

    document = python_docx.Document()
    document.add_heading(title, level=0)
    for heading, text in sections:
        document.add_heading(heading, level=1)
        document.add_paragraph(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pptx(slides: list[tuple[str, str]]) -> bytes:
    """A deck: one title-and-content slide per (title, body)."""
    from pptx import Presentation  # noqa: PLC0415

    deck = Presentation()
    layout = deck.slide_layouts[1]
    for title, body in slides:
        slide = deck.slides.add_slide(layout)
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def html(title: str, body: str) -> bytes:
    """A page with a script and a style around its text."""
    return (
        f"<!doctype html><html><head><title>{title}</title><style>p {{ color: red }}</style>"
        "<script>var secretTracker = 'do-not-index';</script></head>"
        f"<body><h1>{title}</h1><p>{body}</p>"
        "<script>document.write('injected text')</script></body></html>"
    ).encode()
