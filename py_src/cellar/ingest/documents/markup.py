"""HTML into extracted text and units, with the standard library's `html.parser`.

An HTML page's text is not its source: tags, entities and the layout's white space lie between
the words. So the extracted text is written here, block by block (a heading, paragraph, list
item, preformatted block, table), each separated by a blank line, white space collapsed outside
`<pre>`, a table's cells joined by ` | ` one row a line; the units' offsets point into it. Scripts,
styles and templates are dropped. `html.parser` is lenient (it never refuses a page), needs no
dependency and runs in Pyodide; what it reads is text only, nothing is rendered or fetched.
"""

from __future__ import annotations

from html.parser import HTMLParser

from cellar.ingest.documents.blocks import Unit

HEADINGS = {f"h{level}": level for level in range(1, 7)}
BLOCKS = {"p": "paragraph", "li": "list item", "pre": "code", "blockquote": "paragraph", "dd": "paragraph",
          "dt": "paragraph", "figcaption": "paragraph", "caption": "paragraph"}  # fmt: skip
CONTAINERS = {"div", "section", "article", "main", "body", "header", "footer", "ul", "ol", "dl", "nav", "aside"}
DROPPED = {"script", "style", "template", "noscript", "head", "title"}


class _Extractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.length = 0
        self.units: list[Unit] = []
        self.block: tuple[str, int, int] | None = None  # (kind or hN, start, its first part)
        self.dropped = 0
        self.table = 0
        self.pre = 0
        self.cells = 0
        self.title = ""

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
        if tag in DROPPED:
            self.dropped += 1
        elif self.dropped:
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
        if tag in DROPPED:
            self.dropped = max(0, self.dropped - 1)
        elif self.dropped:
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
    extractor.feed(data)
    extractor.close()
    extractor.close_block()
    return "".join(extractor.parts), extractor.units
