"""Question styles in the evaluation: the group a question is reported under per style, and `--style`'s choice.

Must-refuse rows carry no style (bookrag/questions.py); they make the pseudo-style `must-refuse`, so the refusals
are reported and selectable beside the styles. An answerable row without a style (a selected-text question, or a
file without the column) is in no style group: it is left out of the per-style report and of any `--style` choice.
Questions none of which has a style (a file without the column) have no per-style report at all.
"""

from __future__ import annotations

from bookrag.questions import STYLES

MUST_REFUSE = "must-refuse"
STYLE_CHOICES = (*STYLES, MUST_REFUSE)


def style_group(style: str, answerable: bool) -> str | None:
    """The style a question is reported and selected under; None for an answerable question without one."""
    return style or (None if answerable else MUST_REFUSE)


def parse_styles(text: str) -> tuple[str, ...]:
    """`--style paraphrase,must-refuse` as the names it lists; ValueError naming an unknown one."""
    names = tuple(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))
    unknown = [name for name in names if name not in STYLE_CHOICES]
    if unknown or not names:
        raise ValueError(f"unknown style {', '.join(unknown) or repr(text)}: choose from {', '.join(STYLE_CHOICES)} "
                         "(comma-separated)")
    return names


def of_styles(questions: list, styles: tuple[str, ...]) -> list:
    """The questions whose style group is one of `styles`."""
    return [q for q in questions if style_group(q.style, q.answerable) in styles]
