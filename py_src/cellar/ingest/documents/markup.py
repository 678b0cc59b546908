"""HTML into extracted text and units, with the standard library's `html.parser`.

An HTML page's text is not its source: tags, entities and the layout's white space lie between
the words. So the extracted text is written here, block by block (a heading, paragraph, list
item, preformatted block, table), each separated by a blank line, white space collapsed outside
`<pre>`, a table's cells joined by ` | ` one row a line; the units' offsets point into it. Scripts,
styles and templates are dropped. `html.parser` is lenient (it never refuses a page), needs no
dependency and runs in Pyodide; what it reads is text only, nothing is rendered or fetched.

`<head>` may end without `</head>` (HTML makes it optional): it ends where a tag that cannot stand
in a head starts (`<body>`, `<h1>`, `<p>`, ...) or where text does, as a browser reads it.

`html.parser` is quadratic (or worse) on markup that never closes: at the end of the input it
tries every `<` that opens no complete tag again over all the text after it (`<a` 80,000 times,
160 KB, took 38 s). So a page is read in linear time by telling it beforehand what cannot close:
a `<` after the page's last `>` is written as `&lt;` (no tag, comment or declaration can end
without a `>`; html.parser would read it as text at the end anyway, as it now does at once), and
comments and marked sections are read by `LinearHTMLParser`, which finds where each can end once
for the whole text rather than searching to its end again at each `<!--` (its rule is its own,
not the version's: with an end that Python 3.11 does not take, `--!>`, 360 KB of `<!--a>` took
54 s).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from html.parser import HTMLParser

from cellar.ingest.documents.blocks import Unit

HEADINGS = {f"h{level}": level for level in range(1, 7)}
BLOCKS = {"p": "paragraph", "li": "list item", "pre": "code", "blockquote": "paragraph", "dd": "paragraph",
          "dt": "paragraph", "figcaption": "paragraph", "caption": "paragraph"}  # fmt: skip
CONTAINERS = {"div", "section", "article", "main", "body", "header", "footer", "ul", "ol", "dl", "nav", "aside"}
DROPPED = {"script", "style", "template", "noscript", "title"}
# What may stand in a <head>: any other start tag ends a head left without its </head>.
HEAD = {"html", "head", "title", "base", "link", "meta", "style", "script", "noscript", "template"}
# Where a comment and a marked section end, as `LinearHTMLParser` reads them whatever the version
# of html.parser (each has had its own rule): a comment at `--` and `>` with white space or `!`
# between (`-->`, `--!>`, `-- >`), a CDATA or other standard section at `]]>`, an MS Office one
# (`<![if ...]>`) at `]>`; a section of any other keyword is a comment to the next `>`.
COMMENT_END = re.compile(r"--[\s!]*>")
SECTION_ENDS = {
    **dict.fromkeys(("temp", "cdata", "ignore", "include", "rcdata"), re.compile(r"]\s*]\s*>")),
    **dict.fromkeys(("if", "else", "endif"), re.compile(r"]\s*>")),
}
SECTION_KEYWORD = re.compile(r"[a-zA-Z][-_.a-zA-Z0-9]*")


class LinearHTMLParser(HTMLParser):
    """html.parser reading comments and marked sections in linear time: every end of each kind
    is found once per buffer (html.parser keeps one from `feed` to `close`) and the one after a
    `<!--` or `<![` by bisection, rather than searched for again to the end of the text at each
    one. The page extractor and the readers of notebook outputs' HTML (cellar.ingest.outputs,
    cellar.ingest.tables) all read with it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        # per end pattern: the buffer searched, where its matches start, the matches
        self._ends: dict[str, tuple[str, list[int], list[re.Match[str]]]] = {}

    def _end_after(self, pattern: re.Pattern[str], start: int) -> re.Match[str] | None:
        text, starts, matches = self._ends.get(pattern.pattern, ("", [], []))
        if text is not self.rawdata:
            text, matches = self.rawdata, list(pattern.finditer(self.rawdata))
            starts = [match.start() for match in matches]
            self._ends[pattern.pattern] = (text, starts, matches)
        k = bisect_left(starts, start)
        return matches[k] if k < len(matches) else None

    def parse_comment(self, i: int, report: bool = True) -> int:
        end = self._end_after(COMMENT_END, i + 4)
        if end is None:
            return -1  # incomplete: html.parser reads it as text up to the next `>`
        if report:
            self.handle_comment(self.rawdata[i + 4 : end.start()])
        return end.end()

    def parse_marked_section(self, i: int, report: bool = True) -> int:
        keyword = SECTION_KEYWORD.match(self.rawdata, i + 3)
        pattern = SECTION_ENDS.get(keyword.group().lower()) if keyword else None
        if pattern is None:  # `<![foo[`, `<![ x`: a browser reads a comment up to the next `>`
            result: int = self.parse_bogus_comment(i, report)
            return result
        end = self._end_after(pattern, i + 3)
        if end is None:
            return -1
        if report:
            self.unknown_decl(self.rawdata[i + 3 : end.start()])
        return end.end()


class _Extractor(LinearHTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.length = 0
        self.units: list[Unit] = []
        self.block: tuple[str, int, int] | None = None  # (kind or hN, start, its first part)
        self.dropped = 0
        self.table = 0
        self.pre = 0
        self.cells = 0
        self.title = ""
        self.head = False  # inside a <head> (dropped) until </head> or what ends it implicitly

    # -- writing --------------------------------------------------------------------------------

    def write(self, text: str) -> None:
        self.parts.append(text)
        self.length += len(text)

    def tail(self) -> str:
        return self.parts[-1] if self.parts else ""

    def open_block(self, kind: str) -> None:
        self.close_block()
        if self.length:
            self.write("\n\n")
        self.block = (kind, self.length, len(self.parts))

    def close_block(self) -> None:
        """End the open block: the white space written at its end is taken back (part by part,
        never re-joining the whole text, so a long page costs linear time) and its unit noted."""
        if self.block is None:
            return
        kind, start, first_part = self.block
        self.block = None
        while len(self.parts) > first_part:
            last = self.parts[-1]
            kept = last.rstrip()
            self.length -= len(last) - len(kept)
            if kept:
                self.parts[-1] = kept
                break
            self.parts.pop()
        end = self.length
        if end <= start:
            return
        if kind in HEADINGS:
            title = " ".join("".join(self.parts[first_part:]).split())
            self.units.append(Unit("heading", start, end, HEADINGS[kind], title))
        else:
            self.units.append(Unit(kind, start, end))

    # -- parsing --------------------------------------------------------------------------------

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "head":
            self.head = True
            return
        if self.head and tag not in HEAD:
            self.head = False
        if tag in DROPPED:
            self.dropped += 1
        elif self.dropped or self.head:
            return
        elif tag == "table":
            if not self.table:
                self.open_block("table")
            self.table += 1
        elif self.table:
            if tag == "tr" and self.length > self.block_start():
                self.write("\n")
                self.cells = 0
            elif tag in ("td", "th"):
                if self.cells:
                    self.write(" | ")
                self.cells += 1
        elif tag in HEADINGS or tag in BLOCKS:
            self.open_block(tag if tag in HEADINGS else BLOCKS[tag])
            self.pre += tag == "pre"
        elif tag == "br":
            self.write("\n")

    def block_start(self) -> int:
        return self.block[1] if self.block is not None else 0

    def handle_endtag(self, tag: str) -> None:
        if tag == "head":
            self.head = False
        elif tag in DROPPED:
            self.dropped = max(0, self.dropped - 1)
        elif self.dropped or self.head:
            return
        elif tag == "table":
            self.table = max(0, self.table - 1)
            if not self.table:
                self.close_block()
        elif self.table:
            return
        elif tag in HEADINGS or tag in BLOCKS:
            self.close_block()
            self.pre = max(0, self.pre - (tag == "pre"))
        elif tag in CONTAINERS:
            self.close_block()

    def handle_data(self, data: str) -> None:
        if self.dropped:
            return
        if self.head:
            if not data.strip():
                return
            self.head = False  # text cannot stand in a head: the body has begun
        if self.block is None:
            if not data.strip():
                return
            self.open_block("paragraph")
        if not self.pre:
            words = " ".join(data.split())
            if not words:
                if self.tail() and not self.tail()[-1:].isspace():
                    self.write(" ")
                return
            lead = " " if data[:1].isspace() and self.tail() and not self.tail()[-1:].isspace() else ""
            trail = " " if data[-1:].isspace() else ""
            data = lead + words + trail
            if self.length == self.block_start():
                data = data.lstrip()
        self.write(data)


def html_units(data: str) -> tuple[str, list[Unit]]:
    """The extracted text of an HTML page and its units."""
    extractor = _Extractor()
    extractor.feed(open_brackets_as_text(data))
    extractor.close()
    extractor.close_block()
    return "".join(extractor.parts), extractor.units


def open_brackets_as_text(data: str) -> str:
    """`data` with each `<` after its last `>` written `&lt;`: nothing can close there, and
    html.parser would try each one against all the text after it (see the module docstring).
    Notebook outputs' HTML is fed the same way (cellar.ingest.outputs, cellar.ingest.tables)."""
    last = data.rfind(">")
    tail = data[last + 1 :]
    return data if "<" not in tail else data[: last + 1] + tail.replace("<", "&lt;")
