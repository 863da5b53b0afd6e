"""The rendered page read back: each ``<section>``'s text by its id, and tag counts."""

from __future__ import annotations

from html.parser import HTMLParser


class _Sections(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.text: dict[str, str] = {}
        self.tags: dict[str, int] = {}
        self._open: list[str] = []
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        name = f"{tag}.{found['class']}" if found.get("class") else tag
        self.tags[name] = self.tags.get(name, 0) + 1
        if tag == "section" and found.get("id"):
            self._open.append(str(found["id"]))
            self.text.setdefault(self._open[-1], "")
        elif tag == "section":
            self._open.append("")
        if tag in ("br", "tr", "li", "p", "h2", "h3"):
            self._add("\n")
        elif tag in ("td", "th"):
            self._add("\t")

    def handle_endtag(self, tag: str) -> None:
        if tag == "section" and self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        self._add(data)

    def _add(self, text: str) -> None:
        for section in self._open:
            if section:
                self.text[section] += text


def read_page(dom: str) -> tuple[dict[str, str], dict[str, int]]:
    """(text per section id, each table cell after a tab; count per ``tag`` or
    ``tag.class``). ``live`` holds the status line the page's script writes."""
    parser = _Sections()
    parser.feed(dom)
    start = dom.find('id="live"')
    live = dom[dom.find(">", start) + 1 : dom.find("<", start)] if start >= 0 else ""
    parser.text["live"] = live
    return parser.text, parser.tags
