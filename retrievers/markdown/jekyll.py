"""Jekyll/Liquid and GitBook template tags (`{% raw %}`, `{% include note.html %}`, `{% hint %}`): template syntax,
not text."""

from __future__ import annotations

import re

from retrievers.markdown.fences import fence_state
from retrievers.markdown.syntax import Syntax

# Tags on a line of their own (`{% raw %}` around code, `{% include note.html %}`)
_LIQUID_LINE = re.compile(r"^[ \t]*\{%-?\s*\w+.*?-?%\}[ \t]*$")
_LIQUID_RAW = re.compile(r"\{%-?\s*(?:end)?raw\s*-?%\}")


def _drop_liquid_tags(lines: list[str]) -> list[str]:
    """`{% raw %}`/`{% endraw %}` wherever they are (the template engine strips them before Markdown is read, code
    blocks included), and any other tag on a line of its own outside code (`{% include note.html %}`,
    `{% hint style="info" %}` ... `{% endhint %}`: the text between stays)."""
    out: list[str] = []
    fence = None
    for line in lines:
        unwrapped = _LIQUID_RAW.sub("", line)
        if unwrapped != line and not unwrapped.strip():
            continue  # a line that held only the tag goes with it
        fence, in_code = fence_state(unwrapped, fence)
        out.append("" if not in_code and _LIQUID_LINE.match(unwrapped) else unwrapped)
    return out


SYNTAX = Syntax(name="Jekyll/GitBook", line_passes=(_drop_liquid_tags,))
