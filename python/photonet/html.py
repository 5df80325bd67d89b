"""Self-contained HTML reports (``report.html`` of ``compare`` and
``reproduce``): one file, figures embedded, readable offline in any browser.

The reports are written as Markdown first (``report.md``); :func:`from_markdown`
turns the small Markdown subset they use (headings, paragraphs, lists, pipe
tables, images, ``code``, **bold**, links) into HTML, inlining each image as
a data URI."""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path
from typing import Optional

CSS = """
body{font:15px/1.5 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2em auto;padding:0 1.2em;color:#222}
h1{font-size:1.7em;border-bottom:2px solid #3f51b5;padding-bottom:.2em}h2{font-size:1.3em;margin-top:2em;color:#283593}
table{border-collapse:collapse;margin:.8em 0;font-size:13px;display:block;overflow-x:auto}
th,td{border:1px solid #ccd;padding:3px 8px;text-align:left;vertical-align:top}th{background:#eef0fa}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}tr.flag td{background:#fff4e0}
img{max-width:100%;height:auto;border:1px solid #eee;margin:.5em 0}code{background:#f3f3f6;padding:0 3px;border-radius:3px}
.note{color:#555;font-size:13px}
"""

_NUM = re.compile(r"^[−\-+]?[\d,.]+(e[+-]?\d+)?\s*%?$|^–$")


def _inline(text: str) -> str:
    """Escapes ``text`` and renders `code`, **bold** and [links](url)."""
    parts = re.split(r"(`[^`]*`)", text)
    out = []
    for p in parts:
        if p.startswith("`") and p.endswith("`") and len(p) >= 2:
            out.append(f"<code>{html.escape(p[1:-1])}</code>")
            continue
        s = html.escape(p, quote=False)
        s = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", s)
        s = re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r'<a href="\2">\1</a>', s)
        out.append(s)
    return "".join(out)


def image_uri(path: Path) -> Optional[str]:
    """A data URI of an image file, or None if it does not exist."""
    if not path.is_file():
        return None
    mime = {".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg"}.get(path.suffix.lower(), "application/octet-stream")
    return f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _cells(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", s)]


def table(header: list[str], rows: list[list[str]], flagged: Optional[list[bool]] = None) -> str:
    """An HTML table; number cells right-aligned, flagged rows highlighted."""
    h = "".join(f"<th>{_inline(c)}</th>" for c in header)
    body = []
    for i, r in enumerate(rows):
        cls = ' class="flag"' if flagged and flagged[i] else ""
        tds = "".join(f'<td class="num">{_inline(c)}</td>' if _NUM.match(c.strip()) else f"<td>{_inline(c)}</td>" for c in r)
        body.append(f"<tr{cls}>{tds}</tr>")
    return f"<table><thead><tr>{h}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def from_markdown(md: str, base: Path) -> str:
    """HTML of a report's Markdown; images are read from ``base`` and inlined."""
    out: list[str] = []
    lines = md.splitlines()
    i = 0
    para: list[str] = []

    def flush() -> None:
        if para:
            out.append("<p>" + "<br>".join(_inline(p.rstrip()) for p in para) + "</p>")
            para.clear()

    while i < len(lines):
        ln = lines[i]
        s = ln.strip()
        if not s:
            flush()
            i += 1
            continue
        m = re.match(r"^(#{1,4})\s+(.*)$", s)
        img = re.match(r"^!\[([^\]]*)\]\(([^)]+)\)$", s)
        if m:
            flush()
            n = len(m.group(1))
            out.append(f"<h{n}>{_inline(m.group(2))}</h{n}>")
            i += 1
        elif img:
            flush()
            uri = image_uri(base / img.group(2))
            out.append(f'<img alt="{html.escape(img.group(1))}" src="{uri}">' if uri else
                       f'<p class="note">(figure {html.escape(img.group(2))} not drawn)</p>')
            i += 1
        elif s.startswith("|") and i + 1 < len(lines) and re.match(r"^\|?\s*:?-{3,}", lines[i + 1].strip()):
            flush()
            header = _cells(s)
            i += 2
            rows = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            out.append(table(header, rows))
        elif s.startswith("- "):
            flush()
            items = []
            while i < len(lines) and lines[i].strip().startswith("- "):
                items.append(f"<li>{_inline(lines[i].strip()[2:])}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
        else:
            para.append(s)
            i += 1
    flush()
    return "\n".join(out)


def page(title: str, body: str) -> str:
    """A complete HTML document."""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{CSS}</style></head>\n'
            f"<body>\n{body}\n</body></html>\n")
