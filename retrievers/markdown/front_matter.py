"""A page's front matter (YAML, or Hugo's TOML), and YAML read within a bound on its size as its aliases expand
it."""

from __future__ import annotations

import tomllib

import yaml

from retrievers.markdown.page import BookFileError

# A page's front matter holds a title, a slug, tags: a few hundred characters. Beyond this bound, either as written
# or as its YAML aliases expand it (a 1.2 KB alias bomb expands to hundreds of MB), the page is refused.
FRONT_MATTER_MAX_CHARS = 64 * 1024


def split_front_matter(raw: str, source: str) -> tuple[dict, str]:
    """Front matter at the top, YAML between `---` lines or TOML between `+++` lines; a broken or oversized block is
    an error naming the file."""
    lines = raw.split("\n")
    opening = lines[0].rstrip()
    if opening not in ("---", "+++"):
        return {}, raw
    closings = ("---", "...") if opening == "---" else ("+++",)
    for end in range(1, len(lines)):
        if lines[end].strip() in closings:
            block = "\n".join(lines[1:end])
            if len(block) > FRONT_MATTER_MAX_CHARS:
                raise BookFileError(source, f"front matter of {len(block):,} characters, over the "
                                            f"{FRONT_MATTER_MAX_CHARS:,} allowed: shorten the {opening} block")
            front = _parse_yaml(block, source) if opening == "---" else _parse_toml(block, source)
            if not isinstance(front, dict):
                raise BookFileError(source, "front matter is not a mapping of `key: value` lines")
            return front, "\n".join(lines[end + 1 :])
    raise BookFileError(source, f"front matter opened with {opening} is never closed")


def _parse_toml(block: str, source: str) -> dict:
    try:
        return tomllib.loads(block)
    except tomllib.TOMLDecodeError:
        raise BookFileError(source, "broken TOML front matter: fix or remove the +++ block") from None


def _parse_yaml(block: str, source: str) -> object:
    try:
        front = load_bounded_yaml(block, yaml.SafeLoader, FRONT_MATTER_MAX_CHARS) or {}
    except _YamlRefused as exc:
        raise BookFileError(source, f"front matter {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark else ""
        raise BookFileError(source, f"broken YAML front matter{where}: fix or remove the --- block") from None
    return front


class _YamlRefused(yaml.YAMLError):
    """A YAML document refused before it is built: its message says why and what to do."""


def load_bounded_yaml(text: str, loader: type[yaml.SafeLoader], max_chars: int) -> object:
    """`yaml.load`, refusing a document whose nodes, each alias counted as a copy of what it names, hold more than
    `max_chars` characters: the parsed objects share what aliases name, but reading them (str(), iterating) expands
    it. The count stops at the bound, so a bomb costs no more than a document at the bound."""
    reader = loader(text)
    try:
        node = reader.get_single_node()
        if node is None:
            return None
        _check_expanded_size(node, max_chars)
        return reader.construct_document(node)
    except RecursionError:  # PyYAML composes nested collections recursively: 40 KB of `[` is enough
        raise _YamlRefused("nests deeper than Python can read: flatten it") from None
    finally:
        reader.dispose()


def _check_expanded_size(root: yaml.Node, max_chars: int) -> None:
    size, pending = 0, [root]
    while pending:
        node = pending.pop()
        if isinstance(node, yaml.ScalarNode):
            size += len(node.value) + 1
        elif isinstance(node, yaml.SequenceNode):
            size += 1
            pending.extend(node.value)
        else:
            size += 1
            pending.extend(item for pair in node.value for item in pair)
        if size > max_chars:
            raise _YamlRefused(f"expands past {max_chars:,} characters through its YAML aliases (*name), as an "
                               "alias bomb does: remove the aliases")
