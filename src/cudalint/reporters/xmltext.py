"""Text for the XML formats (checkstyle, JUnit). XML 1.0 allows tab, line
feed, carriage return and the characters from U+0020 on, less the
surrogates and U+FFFE/U+FFFF: one other character (a control character in a
file name, a lone surrogate from a name that is not UTF-8) makes the whole
document ill-formed, and Jenkins or GitLab then drop the whole report. Each
becomes the visible escape the text format prints (`\\x01`, `\\udcff`)."""

from __future__ import annotations

import re
from xml.sax.saxutils import escape as _escape
from xml.sax.saxutils import quoteattr as _quoteattr

_FORBIDDEN = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def clean(text: str) -> str:
    """The text with each character XML 1.0 forbids as a visible escape."""
    return _FORBIDDEN.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text)


def attribute(text: str) -> str:
    """A quoted attribute value (line breaks and tabs kept as character references)."""
    return _quoteattr(clean(text), {"\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


def content(text: str) -> str:
    """Element content (a carriage return kept as a character reference)."""
    return _escape(clean(text), {"\r": "&#13;"})
