"""Reading one Markdown/MDX page: front matter, urls, modules, MDX, MkDocs and mdBook cleanup, sections, headings,
titles from the table of contents, hard-wrapped prose."""

from __future__ import annotations

import re

import pytest
from conftest import write_book

from retrievers.markdown import (
    BookFileError,
    find_pages,
    join_wrapped_lines,
    page_url,
    parse_page,
    toc_titles,
)


def parse(tmp_path, rel: str, text: str, **kwargs):
    write_book(tmp_path, {rel: text})
    return parse_page(tmp_path / rel, tmp_path, **kwargs)


def all_text(page) -> str:
    return "\n\n".join(s.text for s in page.sections)


def blocks(page) -> list[str]:
    """The page's text as blocks between blank lines (dropped markup may leave several blank lines in a row)."""
    return [b for b in re.split(r"\n\s*\n", all_text(page)) if b.strip()]


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


@pytest.mark.parametrize("front, title", [
    ('title: "  "\nsidebar_label: Sidebar Name', "Sidebar Name"),
    ('title: "  "', "First Level One"),
    ('title: "  "\nsidebar_label: "\t"', "First Level One"),
])
def test_a_blank_title_is_no_title(tmp_path, front, title):
    """A front matter title of spaces was the page's title: its citations and closest sections showed a blank
    label."""
    page = parse(tmp_path, "x.md", f"---\n{front}\n---\n# First Level One\n\nText.\n\n## Part\n\nMore.\n")
    assert page.title == title
    assert all(path[0].strip() for path in (s.heading_path for s in page.sections))


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


def test_toml_front_matter_is_read_as_front_matter_not_page_text(tmp_path):
    page = parse(tmp_path, "01-ros2/nodes.md", """
        +++
        title = "Nodes and Topics"
        slug = "/nodes"
        module = "basics"
        +++
        Body text about nodes.
        """)
    assert (page.title, page.url, page.module) == ("Nodes and Topics", "/docs/nodes", "basics")
    assert all_text(page) == "Body text about nodes."


@pytest.mark.parametrize("text, why", [
    ('+++\ntitle = "unclosed\n+++\nText.\n', "broken TOML front matter"),
    ('+++\ntitle = "Open"\n\nText without the closing line.\n', "never closed"),
    ("+++\n" + "a = 1\n" * 20_000 + "+++\nText.\n", "shorten the \\+\\+\\+ block"),
])
def test_broken_or_unclosed_toml_front_matter_is_an_error(tmp_path, text, why):
    with pytest.raises(BookFileError, match=why):
        parse(tmp_path, "a.md", text)


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


def test_text_indented_under_a_jsx_tag_is_prose_not_code(tmp_path):
    page = parse(tmp_path, "a.mdx", """
        # Fruit

        <Tabs>
          <TabItem value="apple" label="Apple">
            An apple is red
            and sweet.

            Apples grow on trees.
          </TabItem>
        </Tabs>
        """)
    assert blocks(page) == ["An apple is red and sweet.", "Apples grow on trees."]


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


def test_nested_admonitions_with_more_colons_lose_every_marker(tmp_path):
    page = parse(tmp_path, "a.md", """
        ::::info[Before you flash]

        Check the battery.

        :::danger
        Never flash over Wi-Fi.
        :::

        ::::
        """)
    assert blocks(page) == ["**Before you flash**", "Check the battery.", "Never flash over Wi-Fi."]


def test_liquid_and_gitbook_template_tags_never_reach_the_text(tmp_path):
    page = parse(tmp_path, "a.md", """
        Render the prompt:

        {% raw %}
        ```python
        prompt = f"Plan: {{ task }}"
        ```
        {% endraw %}

        {% hint style="warning" %}
        Keep the gripper open.
        {% endhint %}

        ```jinja
        {% for step in plan %}{{ step }}{% endfor %}
        {% if done %}
        ```

        Inline {% raw %}`{{ x }}`{% endraw %} stays.
        """)
    assert blocks(page) == [
        "Render the prompt:",
        '```python\nprompt = f"Plan: {{ task }}"\n```',
        "Keep the gripper open.",
        "```jinja\n{% for step in plan %}{{ step }}{% endfor %}\n{% if done %}\n```",
        "Inline `{{ x }}` stays.",
    ]


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


@pytest.mark.parametrize("underline", ["===========", "---"])
def test_a_setext_heading_is_a_heading_not_text(tmp_path, underline):
    page = parse(tmp_path, "a.md", f"Kestrel Guide\n===\n\nIntro text.\n\nJoint Limits\n{underline}\n\nLimit text.\n")
    assert page.title == "Kestrel Guide"
    level = ("Kestrel Guide", "Joint Limits") if underline.startswith("-") else ("Joint Limits",)
    assert [(s.heading_path, s.text) for s in page.sections] == [
        (("Kestrel Guide",), "Intro text."), (level, "Limit text.")]


def test_a_rule_after_a_blank_line_and_underlines_in_code_or_lists_are_no_setext_headings(tmp_path):
    text = "# T\n\nProse.\n\n---\n\n```\ncode\n---\n```\n\n- item\n---\n\n    indented code\n    ---\n"
    page = parse(tmp_path, "a.md", text)
    assert [s.heading_path for s in page.sections] == [("T",)]


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


def test_jsx_template_literal_code_is_kept_as_a_fenced_block(tmp_path):
    page = parse(tmp_path, "a.mdx", """
        <CodeBlock language="python">
        {`def check():
            # verify the install
            return True
        `}
        </CodeBlock>
        """)
    assert all_text(page) == "```\ndef check():\n    # verify the install\n    return True\n\n```"


def test_inline_code_spans_keep_their_angle_brackets(tmp_path):
    page = parse(tmp_path, "a.md", "Call `RegisterPublisher<T>()` inside a <span>styled</span> `<div>` example.\n")
    assert all_text(page) == "Call `RegisterPublisher<T>()` inside a styled `<div>` example."


def test_html_comments_outside_code_are_dropped(tmp_path):
    page = parse(tmp_path, "a.md", """
        Before <!-- an inline note --> after.

        <!--
        A comment spread
        over lines.
        -->

        ```xml
        <!-- kept in code -->
        ```
        """)
    text = all_text(page)
    assert "Before  after." in text
    assert "spread" not in text
    assert "<!-- kept in code -->" in text


# -- MkDocs ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("attributes", ["{ #data-validation }", "{#data-validation}", "{: #data-validation .big }"])
def test_heading_attribute_list_is_not_text_and_its_id_is_the_anchor(tmp_path, attributes):
    page = parse(tmp_path, "path-params.md", f"""
        # Path Parameters {attributes.replace("data-validation", "path-parameters")}

        Intro.

        ## Data validation {attributes}

        Checked.
        """)
    assert page.title == "Path Parameters"
    assert [(s.heading_path, s.anchor) for s in page.sections] == [
        (("Path Parameters",), ""),
        (("Path Parameters", "Data validation"), "data-validation"),
    ]


def test_braces_that_are_heading_text_stay(tmp_path):
    page = parse(tmp_path, "a.md", "# T\n\n## Route /items/{item_id}\n\nText.\n")
    assert page.sections[0].heading_path == ("T", "Route /items/{item_id}")


def test_heading_text_keeps_underscores_of_code_and_identifiers(tmp_path):
    page = parse(tmp_path, "a.md", "# T\n\n## The `response_model` of my_node, in _italics_\n\nText.\n")
    assert page.sections[0].heading_path == ("T", "The response_model of my_node, in italics")
    assert page.sections[0].anchor == "the-response_model-of-my_node-in-italics"


def test_mkdocs_block_admonitions_keep_their_text_and_title_but_not_the_markers(tmp_path):
    page = parse(tmp_path, "a.md", """
        /// note | Technical Details

        Starlette does the work.

        ///

        //// tab | Python 3.10+

        /// tip

        Prefer `Annotated`.

        ///

        ////
        """)
    assert blocks(page) == [
        "**Technical Details**", "Starlette does the work.", "**Python 3.10+**", "Prefer `Annotated`."
    ]


def test_indented_admonitions_are_dedented_and_lose_their_marker(tmp_path):
    page = parse(tmp_path, "a.md", """
        !!! warning "Hot surface"
            Let the motor cool first.

            ```bash
            sleep 60
            ```

        ???+ note
            !!! tip
                Nested advice.

        After the box.
        """)
    blocks = [b for b in all_text(page).split("\n") if b]
    assert blocks == [
        "**Hot surface**", "Let the motor cool first.", "```bash", "sleep 60", "```", "Nested advice.", "After the box."
    ]


def test_mkdocs_content_tabs_keep_each_tab_title_and_its_dedented_body(tmp_path):
    page = parse(tmp_path, "a.md", """
        Install the driver.

        === "Ubuntu"

            Run the installer:

            ```bash
            sudo apt install kestrel-driver
            ```

        ===! "macOS"
            Use Homebrew.
        """)
    blocks = [b for b in all_text(page).split("\n") if b]
    assert blocks == ["Install the driver.", "**Ubuntu**", "Run the installer:", "```bash",
                      "sudo apt install kestrel-driver", "```", "**macOS**", "Use Homebrew."]


def test_reference_links_read_as_their_text_and_their_definitions_go(tmp_path):
    page = parse(tmp_path, "a.md", """
        See [the guide][g], [Setup][] and [setup]; m[i][j] and [x] are no links.

        [g]: https://example.com/guide "The guide"
        [setup]: <https://example.com/setup>

        ```python
        [g]: kept
        ```
        """)
    blocks = [b for b in all_text(page).split("\n") if b]
    assert blocks == ["See the guide, Setup and setup; m[i][j] and [x] are no links.", "```python", "[g]: kept", "```"]


def test_footnote_marks_go_and_their_notes_stay_as_text(tmp_path):
    page = parse(tmp_path, "a.md", """
        The driver reads its calibration at start-up[^cal]; names match [^a-z] nowhere.
        [^cal]: Calibration files live in `/etc/kestrel`.
        """)
    blocks = [b for b in all_text(page).split("\n") if b]
    assert blocks == ["The driver reads its calibration at start-up; names match [^a-z] nowhere.",
                      "Calibration files live in `/etc/kestrel`."]


def test_mdbook_hidden_lines_of_rust_code_go_and_other_code_keeps_its_comments(tmp_path):
    page = parse(tmp_path, "a.md", """
        ```rust,ignore
        # fn main() {
        #[derive(Debug)]
        struct Point;
        ## let shown = 1;
        # }
        ```

        ```python
        # a comment
        ```
        """)
    blocks = [b for b in all_text(page).split("\n") if b]
    assert blocks == ["```rust,ignore", "#[derive(Debug)]", "struct Point;", "# let shown = 1;", "```",
                      "```python", "# a comment", "```"]


def test_mkdocs_include_directives_never_reach_the_text(tmp_path):
    page = parse(tmp_path, "a.md", """
        Declare the parameter:

        {* ../../docs_src/path_params/tutorial001_py310.py hl[6:7] *}

        ```python
        --8<-- "docs_src/app.py"
        ```

        --8<--
        includes/abbreviations.md
        --8<--

        Then run it.
        """)
    assert [b for b in all_text(page).split("\n") if b] == ["Declare the parameter:", "Then run it."]


def test_terminal_html_is_reduced_to_what_the_terminal_shows_but_xml_keeps_its_tags(tmp_path):
    page = parse(tmp_path, "a.md", """
        <div class="termy">

        ```console
        $ <font color="#4E9A06">fastapi</font> dev <u style="x">main.py</u>
        <span style="background-color:#009485"> INFO </span> watching <b>[</b>&apos;/app&apos;<b>]</b>
        ```

        </div>

        ```bash
        ros2 run <package_name> <executable> > log.txt
        ```

        ```xml
        <link name="base"><visual><font>kept</font></visual></link>
        ```
        """)
    assert blocks(page) == [
        "```console\n$ fastapi dev main.py\n INFO  watching ['/app']\n```",
        "```bash\nros2 run <package_name> <executable> > log.txt\n```",
        '```xml\n<link name="base"><visual><font>kept</font></visual></link>\n```',
    ]


def test_html_abbreviations_keep_their_meaning_and_code_tags_become_backticks(tmp_path):
    page = parse(tmp_path, "a.md", """
        # Data <dfn title="also known as: parsing">conversion</dfn>

        Use an <abbr title="Object Relational Mapper">ORM</abbr> or <abbr title="greater than"><code>gt</code></abbr>.

        | field | info |
        |---|---|
        | `contact` | <details><summary><code>contact</code> fields</summary><table><tr><td>name</td><td>str</td> |
        """)
    assert page.title == "Data conversion"
    text = all_text(page)
    assert "Use an ORM (Object Relational Mapper) or `gt` (greater than)." in text
    assert "| `contact` | `contact` fields name str" in text
    assert "<" not in text


# -- mdBook ---------------------------------------------------------------------------------------------------


def test_mdbook_include_inside_the_book_is_resolved_with_line_ranges_and_anchors(tmp_path):
    book = write_book(tmp_path / "src", {
        "listings/main.rs": """
            fn main() {
                // ANCHOR: body
                let x = 1;
                println!("{x}");
                // ANCHOR_END: body
            }
            """,
        "ch01.md": """
            ```rust
            {{#include listings/main.rs:body}}
            ```

            ```rust
            {{#include listings/main.rs:1:3}}
            ```

            ```rust
            {{#rustdoc_include listings/main.rs:4}}
            ```

            {{#playground listings/main.rs::1}}
            """,
    })
    text = all_text(parse_page(book / "ch01.md", book))
    assert text == (
        '```rust\n    let x = 1;\n    println!("{x}");\n```\n\n'
        "```rust\nfn main() {\n    let x = 1;\n```\n\n"
        '```rust\n    println!("{x}");\n```\n\n'
        "```rust\nfn main() {\n```"
    )


def test_mdbook_include_of_a_file_outside_the_book_is_dropped_with_its_empty_fence(tmp_path):
    write_book(tmp_path / "listings", {"secret.rs": "fn leaked() {}"})
    book = write_book(tmp_path / "src", {"ch01.md": """
        Code below.

        ```rust
        {{#include ../listings/secret.rs}}
        ```

        {{#title Browser tab title}}
        Literal \\{{#include example.rs}} text.
        """})
    assert blocks(parse_page(book / "ch01.md", book)) == ["Code below.", "Literal {{#include example.rs}} text."]


def test_summary_md_is_the_table_of_contents_not_a_page(mdbook_src):
    found = [p.relative_to(mdbook_src).as_posix() for p in find_pages(mdbook_src)]
    assert "SUMMARY.md" not in found
    assert "guide/ch02-01-setup.md" in found


def test_page_without_h1_takes_its_title_from_summary_md(mdbook_src):
    toc = toc_titles(mdbook_src)
    assert toc == {
        "intro.md": "Introduction", "guide/ch01-00-start.md": "Getting started",
        "guide/ch02-01-setup.md": "Setup", "guide/config type.md": "The Config type",
    }
    setup = parse_page(mdbook_src / "guide/ch02-01-setup.md", mdbook_src, toc=toc)
    assert setup.title == "Setup"
    assert setup.sections[0].heading_path == ("Setup", "Installing the toolchain")
    assert 'let port = open_serial_port("/dev/ttyACM0");' in setup.sections[0].text
    assert parse_page(mdbook_src / "intro.md", mdbook_src, toc=toc).title == "Introduction"


def test_h1_wins_over_the_table_of_contents(mdbook_src):
    page = parse_page(mdbook_src / "guide/ch01-00-start.md", mdbook_src, toc=toc_titles(mdbook_src))
    assert page.title == "Getting Started With the Controller"


def test_page_without_h1_takes_its_title_from_mkdocs_nav_in_the_parent_folder(tmp_path):
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: Demo\n"
        "markdown_extensions:\n"
        "  - pymdownx.emoji:\n"
        "      emoji_index: !!python/name:material.extensions.emoji.twemoji\n"
        "extra:\n"
        "  key: !ENV [ANALYTICS_KEY, none]\n"
        "nav:\n"
        "  - Home: index.md\n"
        "  - User Guide:\n"
        "      - Setup: guide/setup.md\n"
        "      - guide/untitled.md\n"
        "      - Deeper:\n"
        "          - Tuning the loop: guide/tuning.md\n"
        "  - Elsewhere: https://example.com/\n"
    )
    docs = write_book(tmp_path / "docs", {"guide/tuning.md": "## Gains\n\nText.\n", "guide/untitled.md": "Text.\n"})
    toc = toc_titles(docs)
    assert toc == {"index.md": "Home", "guide/setup.md": "Setup", "guide/tuning.md": "Tuning the loop"}
    assert parse_page(docs / "guide/tuning.md", docs, toc=toc).title == "Tuning the loop"


def test_title_falls_back_to_the_first_heading_of_any_level_then_the_file_name(tmp_path):
    with_h2 = parse(tmp_path, "guide/ch02-01-setup.md", "Opening.\n\n## Setting up\n\nText.\n\n# Later H1\n")
    with_h3 = parse(tmp_path, "guide/ch02-02-run.md", "### Running it { #run }\n\nText.\n")
    assert with_h2.title == "Later H1"  # an H1 anywhere still wins
    assert with_h3.title == "Running it"
    assert [s.heading_path for s in with_h3.sections] == [("Running it",)]  # not ("Running it", "Running it")
    assert parse(tmp_path, "guide/ch02-03-notes.md", "Only text.\n").title == "Ch02 03 notes"


# -- hard-wrapped prose ---------------------------------------------------------------------------------------


def test_wrapped_paragraph_joins_into_one_line_and_its_list_stays_one_item_a_line():
    text = "The three steps below must run in order before\nthe controller starts:\n\n1. a\n2. b"
    joined = "The three steps below must run in order before the controller starts:\n\n1. a\n2. b"
    assert join_wrapped_lines(text) == joined


def test_list_item_continuation_lines_join_their_item_but_a_new_item_does_not():
    text = "- first item wrapped\n  onto two lines\n- second\n    1. nested item\n       continued\n* third"
    assert join_wrapped_lines(text) == (
        "- first item wrapped onto two lines\n- second\n    1. nested item continued\n* third"
    )


def test_code_tables_headings_and_html_lines_are_never_joined():
    text = (
        "Intro line\n```python\nx = 1\n  y = 2\n```\nAfter code\n# Heading\nunder it\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n"
        "name | value\n--- | ---\nk | v\n\n"
        "<img src='x.png'>\nnext line\n\n    indented code\n    more code\n"
    )
    assert join_wrapped_lines(text) == text


def test_code_fenced_in_a_blockquote_is_never_joined_and_quote_markers_in_code_are_code():
    text = "> ```python\n> # update the pose\n> robot.pose = msg.pose\n> x = 1\n> ```\n\n```\n> ```\nin code\n```"
    assert join_wrapped_lines(text) == text


def test_blockquote_lines_join_within_one_depth_only():
    text = "> quoted prose\n> wrapped here\n> > deeper\n> > still deeper\nlazy"
    assert join_wrapped_lines(text) == "> quoted prose wrapped here\n> > deeper still deeper\nlazy"


def test_hard_breaks_and_label_lines_keep_their_own_line():
    text = "A break  \nnext\n\nA slash\\\nnext\n\n**Issue**: no power\nat all\n**Fix**: charge it\n\n✅ fast\n✅ safe"
    assert join_wrapped_lines(text) == (
        "A break\nnext\n\nA slash\nnext\n\n**Issue**: no power at all\n**Fix**: charge it\n\n✅ fast\n✅ safe"
    )


def test_wrapped_page_is_joined_at_ingest(tmp_path):
    page = parse(tmp_path, "a.md", """
        # Wrapped

        A paragraph that an editor
        wrapped at a narrow
        column.

        ```text
        code line one
        code line two
        ```
        """)
    assert page.sections[0].text == (
        "A paragraph that an editor wrapped at a narrow column.\n\n```text\ncode line one\ncode line two\n```"
    )


# -- citation URLs stay under the base URL, percent-encoded (issue 31) ----------------------------------------


@pytest.mark.parametrize("slug, base_url", [
    ("../../../etc", "/docs"),  # climbs out of the docs root
    ("/../../etc/passwd", "/docs"),
    ("//evil.example.com/phish", "/"),  # a protocol-relative URL: another site
    ("https://evil.example.com/phish", "/docs"),  # an absolute URL of its own
    ("javascript:alert(1)", "/docs"),
])
def test_a_slug_that_leaves_the_docs_root_gives_the_file_path_url_with_a_warning(tmp_path, caplog, slug, base_url):
    page = parse(tmp_path, "01-ros2/02-nodes.md", f"---\nslug: '{slug}'\n---\nText.\n", base_url=base_url)
    assert page.url == base_url.rstrip("/") + "/ros2/nodes"
    assert f"01-ros2/02-nodes.md: slug {slug!r} leaves the docs root" in caplog.text


def test_a_slug_that_climbs_but_stays_inside_is_followed(tmp_path, caplog):
    page = parse(tmp_path, "01-ros2/02-nodes.md", "---\nslug: ../shared/./nodes\n---\nText.\n")
    assert page.url == "/docs/shared/nodes"
    assert "leaves the docs root" not in caplog.text


@pytest.mark.parametrize("source, slug, url", [
    ("01-ros2/odd\nname #1?.md", None, "/docs/ros2/odd%0Aname%20%231%3F"),
    ("café/100%.md", None, "/docs/caf%C3%A9/100%25"),
    ("a/b.md", "/x y/#top?", "/docs/x%20y/%23top%3F"),
    ("a/b.md", "/guide/", "/docs/guide/"),
])
def test_url_segments_are_percent_encoded(source, slug, url):
    assert page_url(source, slug, "/docs") == url
