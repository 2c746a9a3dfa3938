"""Reading one Markdown/MDX page: front matter, urls, modules, MDX cleanup, sections and headings."""

from __future__ import annotations

import pytest
from conftest import write_book

from retrievers.markdown import BookFileError, find_pages, page_url, parse_page


def parse(tmp_path, rel: str, text: str, **kwargs):
    write_book(tmp_path, {rel: text})
    return parse_page(tmp_path / rel, tmp_path, **kwargs)


def all_text(page) -> str:
    return "\n\n".join(s.text for s in page.sections)


# -- front matter: title, url, module --------------------------------------------------------------------------


def test_front_matter_title_is_the_page_title(tmp_path):
    page = parse(tmp_path, "a.md", """
        ---
        title: The Real Title
        sidebar_label: Short
        ---
        # A Different Heading

        Body.
        """)
    assert page.title == "The Real Title"


def test_sidebar_label_is_the_title_when_there_is_no_title(tmp_path):
    page = parse(tmp_path, "a.md", """
        ---
        sidebar_label: Sidebar Name
        ---
        Body without any heading.
        """)
    assert page.title == "Sidebar Name"


def test_first_h1_then_file_name_are_the_title_fallbacks(tmp_path):
    with_h1 = parse(tmp_path, "x.md", "## Not this\n\nText.\n\n# First Level One\n\nMore.\n")
    bare = parse(tmp_path, "03-getting-started.md", "Just text.\n")
    assert with_h1.title == "First Level One"
    assert bare.title == "Getting started"


def test_url_strips_number_prefixes_from_folders_and_files(tmp_path):
    page = parse(tmp_path, "01-ros2/02-nodes-and-topics.md", "Text.\n")
    assert page.url == "/docs/ros2/nodes-and-topics"


def test_absolute_slug_hangs_off_the_docs_root(tmp_path):
    page = parse(tmp_path, "01-ros2/02-nodes.md", "---\nslug: /custom/place\n---\nText.\n")
    assert page.url == "/docs/custom/place"


def test_relative_slug_replaces_only_the_file_part(tmp_path):
    page = parse(tmp_path, "01-ros2/02-nodes.md", "---\nslug: renamed-page\n---\nText.\n")
    assert page.url == "/docs/ros2/renamed-page"


def test_root_slug_and_index_pages_map_to_their_folder():
    assert page_url("intro.md", "/", "/docs") == "/docs/"
    assert page_url("01-ros2/index.md", None, "/docs") == "/docs/ros2"
    assert page_url("guide/README.mdx", None, "/docs") == "/docs/guide"


def test_base_url_is_configurable(tmp_path):
    page = parse(tmp_path, "01-a/b.md", "Text.\n", base_url="/book/")
    assert page.url == "/book/a/b"


def test_module_comes_from_the_first_folder_without_its_number_prefix(tmp_path):
    page = parse(tmp_path, "02-digital-twin/sub/01-gazebo.md", "Text.\n")
    assert page.module == "digital-twin"


def test_root_files_belong_to_the_general_module(tmp_path):
    assert parse(tmp_path, "intro.md", "Text.\n").module == "general"


def test_module_front_matter_overrides_the_folder(tmp_path):
    page = parse(tmp_path, "02-digital-twin/a.md", "---\nmodule: simulation\n---\nText.\n")
    assert page.module == "simulation"


def test_broken_yaml_front_matter_is_an_error_naming_the_file(tmp_path):
    with pytest.raises(BookFileError) as info:
        parse(tmp_path, "01-ros2/broken.md", "---\ntitle: [unclosed\nsidebar: : :\n---\nText.\n")
    assert info.value.source == "01-ros2/broken.md"
    assert "01-ros2/broken.md" in str(info.value)
    assert "front matter" in str(info.value)


def test_front_matter_that_is_never_closed_is_an_error(tmp_path):
    with pytest.raises(BookFileError, match="never closed"):
        parse(tmp_path, "open.md", "---\ntitle: Open\n\nText without the closing line.\n")


def test_front_matter_that_is_not_a_mapping_is_an_error(tmp_path):
    with pytest.raises(BookFileError, match="mapping"):
        parse(tmp_path, "list.md", "---\n- a\n- b\n---\nText.\n")


def test_non_utf8_file_is_an_error_naming_the_file(tmp_path):
    (tmp_path / "latin1.md").write_bytes("# Caf\u00e9\n\nNa\u00efve text.\n".encode("latin-1"))
    with pytest.raises(BookFileError) as info:
        parse_page(tmp_path / "latin1.md", tmp_path)
    assert info.value.source == "latin1.md"
    assert "UTF-8" in str(info.value)


def test_utf8_byte_order_mark_is_accepted(tmp_path):
    (tmp_path / "bom.md").write_bytes("\ufeff---\ntitle: With BOM\n---\nText.\n".encode("utf-8"))
    assert parse_page(tmp_path / "bom.md", tmp_path).title == "With BOM"


# -- MDX cleanup --------------------------------------------------------------------------------------------


def test_mdx_import_and_export_lines_are_dropped_but_code_keeps_them(tmp_path):
    page = parse(tmp_path, "a.mdx", """
        import Tabs from '@theme/Tabs';
        export const meta = {level: 2};

        Prose stays.

        ```python
        import os
        export_path = "x"
        ```
        """)
    text = all_text(page)
    assert "@theme/Tabs" not in text
    assert "export const" not in text
    assert "Prose stays." in text
    assert "import os" in text


def test_jsx_tags_on_one_line_are_dropped_and_inner_text_kept(tmp_path):
    page = parse(tmp_path, "a.mdx", """
        <Tabs groupId="lang">
        <TabItem value="py" label="Python">

        Use the Python client library.

        </TabItem>
        </Tabs>

        A <Highlight color="#25c2a0">highlighted phrase</Highlight> in prose.
        """)
    text = all_text(page)
    assert "Use the Python client library." in text
    assert "A highlighted phrase in prose." in text
    assert "<" not in text and "groupId" not in text


def test_multiline_jsx_component_keeps_its_prose_props_and_drops_the_data(tmp_path):
    page = parse(tmp_path, "a.mdx", """
        Before the table.

        <HardwareTable
          caption="Recommended workstation parts"
          id="hw"
          data={[
            {part: "gpu", model: "RTX4090"},
            {part: "cpu", model: "i9"},
          ]}
        />

        After the table.
        """)
    text = all_text(page)
    assert "Recommended workstation parts" in text
    assert "Before the table." in text and "After the table." in text
    for leftover in ("<HardwareTable", "data=", "RTX4090", "{", "/>", "hw"):
        assert leftover not in text


def test_jsx_comments_are_dropped(tmp_path):
    page = parse(tmp_path, "a.mdx", "Visible {/* hidden note */} text.\n")
    assert all_text(page) == "Visible  text."


def test_admonitions_keep_their_body_and_custom_title_but_not_the_fences(tmp_path):
    page = parse(tmp_path, "a.md", """
        :::tip Battery safety
        Never charge a swollen pack.
        :::

        :::note
        Plain note body.
        :::
        """)
    text = all_text(page)
    assert "**Battery safety**" in text
    assert "Never charge a swollen pack." in text
    assert "Plain note body." in text
    assert ":::" not in text
    assert "tip" not in text and "note" not in text.replace("note body", "")


# -- sections and headings ----------------------------------------------------------------------------------


def test_hash_line_inside_a_fenced_code_block_is_not_a_heading(tmp_path):
    page = parse(tmp_path, "a.md", """
        # Setup

        Run this:

        ```bash
        # install the packages
        sudo apt install ros-jazzy-desktop
        ```

        ~~~
        ## still code
        ~~~
        """)
    assert [s.heading_path for s in page.sections] == [("Setup",)]
    assert "# install the packages\nsudo apt install ros-jazzy-desktop" in page.sections[0].text
    assert "## still code" in page.sections[0].text


def test_sections_follow_the_heading_tree(tmp_path):
    page = parse(tmp_path, "a.md", """
        # Guide

        Intro text.

        ## Part A

        A text.

        ### Detail

        Detail text.

        ## Part B

        B text.
        """)
    assert [(s.heading_path, s.anchor, s.text) for s in page.sections] == [
        (("Guide",), "", "Intro text."),
        (("Guide", "Part A"), "part-a", "A text."),
        (("Guide", "Part A", "Detail"), "detail", "Detail text."),
        (("Guide", "Part B"), "part-b", "B text."),
    ]


def test_skipped_heading_levels_give_a_sensible_path(tmp_path):
    page = parse(tmp_path, "a.md", """
        # Top

        #### Deep

        Deep text.

        ## Back up

        Up text.
        """)
    paths = {s.text: s.heading_path for s in page.sections}
    assert paths["Deep text."] == ("Top", "Deep")
    assert paths["Up text."] == ("Top", "Back up")


def test_page_without_h1_prefixes_the_title_to_the_heading_path(tmp_path):
    page = parse(tmp_path, "a.md", """
        ---
        title: Page Title
        ---
        Opening text.

        ### Jumped straight to three

        Text three.
        """)
    assert [s.heading_path for s in page.sections] == [("Page Title",), ("Page Title", "Jumped straight to three")]
    assert page.sections[1].anchor == "jumped-straight-to-three"


def test_heading_text_is_plain_and_anchor_is_slugged(tmp_path):
    page = parse(tmp_path, "a.md", "# T\n\n## The `rclpy` **API**, explained! ##\n\nText.\n")
    assert page.sections[0].heading_path == ("T", "The rclpy API, explained!")
    assert page.sections[0].anchor == "the-rclpy-api-explained"


def test_hash_that_ends_a_heading_word_is_kept(tmp_path):
    page = parse(tmp_path, "a.md", "# T\n\n## Scripting in C#\n\nText.\n")
    assert page.sections[0].heading_path == ("T", "Scripting in C#")


def test_tables_are_kept_verbatim(tmp_path):
    table = "| Joint | Limit |\n|---|---|\n| hip | 2.1 rad |\n| knee | 2.6 rad |"
    page = parse(tmp_path, "a.md", f"# Limits\n\nJoint limits:\n\n{table}\n")
    assert table in page.sections[0].text


def test_find_pages_lists_markdown_in_order_and_skips_hidden_and_node_modules(tmp_path):
    write_book(tmp_path, {
        "b.md": "x", "a.mdx": "x", "02-sub/c.md": "x", "notes.txt": "x", "_category_.json": "{}",
        ".hidden/d.md": "x", "node_modules/pkg/e.md": "x",
    })
    found = [p.relative_to(tmp_path).as_posix() for p in find_pages(tmp_path)]
    assert found == ["02-sub/c.md", "a.mdx", "b.md"]


def test_find_pages_skips_a_link_that_leaves_the_book_with_a_warning(tmp_path, caplog):
    book = write_book(tmp_path / "book", {"a.md": "# A", "sub/b.md": "# B"})
    secret = write_book(tmp_path / "elsewhere", {"notes.md": "# Private notes"}) / "notes.md"
    (book / "leak.md").symlink_to(secret)
    (book / "sub" / "alias.md").symlink_to(book / "a.md")  # a link inside the book is just another page
    found = [p.relative_to(book).as_posix() for p in find_pages(book)]
    assert found == ["a.md", "sub/alias.md", "sub/b.md"]
    (warning,) = [r for r in caplog.records if r.levelname == "WARNING"]
    assert "skipped leak.md" in warning.getMessage() and "outside the book folder" in warning.getMessage()
