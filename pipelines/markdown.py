"""Values from a URL or from the data, made safe to place in Markdown.

A node, job, user or team name, or a `?week=` from a shared link, is text: it must never become
a link, an image, HTML or formatting inside the dashboard's own boxes or a report meant for a wiki.
"""

from __future__ import annotations

import html
import re
import string

_PUNCTUATION = re.compile("([" + re.escape(string.punctuation) + "])")
_CELL_SPECIAL = re.compile(r"([\\`*_\[\]!|~{}$^@])")
# GFM turns `http://...` and `www....` in plain text into links: break the two markers.
_AUTOLINK = re.compile(r"(?i)(://|www\.)")


def escape_markdown(value: object) -> str:
    """`value` as literal text in Markdown (Streamlit's renderer included).

    Every ASCII punctuation character is backslash-escaped (CommonMark allows it for all of them),
    so no link, image, autolink, HTML tag, entity, code span, colour directive or LaTeX can start;
    line breaks become spaces so a value cannot open a new block (a list, a heading).
    """
    text = " ".join(str(value).splitlines())
    return _PUNCTUATION.sub(r"\\\1", text)


def escape_markdown_cell(value: object) -> str:
    """`value` as literal text in a GitHub-flavoured Markdown table cell (a wiki page).

    HTML is written as entities (`&lt;script&gt;`), Markdown link, image and emphasis syntax and
    the cell separator are backslash-escaped, bare URLs do not autolink; numbers and dates read
    as before (`66.6 %`, `2026-11-23`, `(UTC)`).
    """
    text = html.escape(" ".join(str(value).splitlines()), quote=False)
    text = _CELL_SPECIAL.sub(r"\\\1", text)
    return _AUTOLINK.sub(lambda m: m.group(1)[:-1] + "\\" + m.group(1)[-1] if m.group(1).endswith(".")
                         else "\\" + m.group(1), text)
