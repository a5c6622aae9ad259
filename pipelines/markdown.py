"""Values from a URL or from the data, made safe to place in Markdown.

A node, job, user or team name, or a `?week=` from a shared link, is text: it must never become
a link, an image, HTML or formatting inside the dashboard's own boxes or a report meant for a wiki.
"""

from __future__ import annotations

import html
import re

# Characters that start a link, image, autolink, HTML tag or entity, code span, emphasis,
# strikethrough, table cell, colour directive or LaTeX anywhere in a line.
_INLINE_SPECIAL = re.compile(r"([\\`*_\[\]!<>&$:~|{}@^])")
# ... and those that start a block (heading, quote, list, setext underline) at the start of a line.
_BLOCK_START = re.compile(r"^(\s*)([#>+=-]|\d+(?=[.)]))")
_CELL_SPECIAL = re.compile(r"([\\`*_\[\]!|~{}$^@])")
# GFM links bare `http://...`, `www....` and `name@domain` in plain text, after escapes are
# resolved (remark-gfm, which Streamlit uses, finds them in the parsed text): an invisible word
# joiner after `:`, `www` and `@` breaks the pattern and leaves the text as it reads.
_AUTOLINK = re.compile(r"(?i)(\\?:(?=//)|www(?=\\?\.)|\\?@)")
WORD_JOINER = "\u2060"


def _break_autolinks(text: str) -> str:
    return _AUTOLINK.sub(lambda m: m.group(1) + WORD_JOINER, text)


def escape_markdown(value: object) -> str:
    """`value` as literal text in Markdown (Streamlit's renderer included).

    The characters that can start a link, image, autolink, HTML, code, emphasis, directive or
    LaTeX are backslash-escaped (CommonMark allows it for every ASCII punctuation character),
    and a block marker at the start (`# `, `- `, `1.`); line breaks become spaces so a value
    cannot open a block of its own; a bare URL or e-mail address gets an invisible word joiner.
    Letters, digits, `-`, `.` and `/` read as written.
    """
    text = " ".join(str(value).splitlines())
    text = _INLINE_SPECIAL.sub(r"\\\1", text)
    text = _BLOCK_START.sub(
        lambda m: (
            m.group(1) + ("\\" + m.group(2) if not m.group(2).isdigit() else m.group(2) + "\\")
        ),
        text,
    )
    return _break_autolinks(text)


def escape_markdown_cell(value: object) -> str:
    """`value` as literal text in a GitHub-flavoured Markdown table cell (a wiki page).

    HTML is written as entities (`&lt;script&gt;`), Markdown link, image and emphasis syntax and
    the cell separator are backslash-escaped, bare URLs do not autolink; numbers and dates read
    as before (`66.6 %`, `2026-11-23`, `(UTC)`).
    """
    text = html.escape(" ".join(str(value).splitlines()), quote=False)
    return _break_autolinks(_CELL_SPECIAL.sub(r"\\\1", text))
