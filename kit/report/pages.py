"""What a reader of an executed notebook would see as a fault of the page (``page_problems``): a
displayed table with a missing-value cell (NaN, ``<NA>``, None, NaT), an absl or TensorFlow C++ log
line, the seeds' file names ("seed 000", "seed 004") where the page should name the user, and a
headline shown twice. Standard library only, as ``kit.report.noise``.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from kit.report.index import RECORD_MIME, records
from kit.report.noise import is_noise

#: A table cell a reader reads as "missing": pandas' NaN, its nullable types' <NA>, a None in an
#: object column, a missing timestamp. An empty string is a blank, and clean.
MISSING = ("NaN", "nan", "<NA>", "None", "NaT")

#: Log lines beyond ``kit.report.noise.NOISE`` (which keeps the start-up lines the kit drops on
#: purpose): any glog-style line of TensorFlow's C++ (its level letter, date, time, thread, file:line),
#: and the words of the lines seen on machines without a GPU, however they are prefixed.
LOG_LINES = [
    re.compile(r"^[IWEF]\d{4} [\d:.]+\s+\d+ [\w./-]+:\d+\]"),
    re.compile(r"^WARNING: All log messages before absl"),
    re.compile(r"\bcuInit\b"),
    re.compile(r"oneDNN custom operations"),
]

#: The seeds' own names for the users; a page says "the spectrogram user", "the segmentation user".
SEED_NAMES = re.compile(r"\bseed\s+00[04]\b", re.IGNORECASE)

_WORD_MISSING = re.compile(r"(?<![\w<])(NaN|<NA>|None|NaT)(?![\w>])")


def is_log_line(line: str) -> bool:
    """Whether ``line`` of output is an absl or TensorFlow C++ log line (``NOISE`` or ``LOG_LINES``)."""
    s = line.strip()
    return bool(s) and (is_noise(s) or any(p.search(s) for p in LOG_LINES))


class _Tables(HTMLParser):
    """The tables of an HTML fragment: per table its header rows and its body rows, as cell texts."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables: list[dict] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._in_head = False

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append({"header": [], "rows": []})
        elif tag == "thead":
            self._in_head = True
        elif tag == "tr" and self.tables:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None and self.tables:
            if self._in_head:
                self.tables[-1]["header"].append(self._row)
            else:
                self.tables[-1]["rows"].append(self._row)
            self._row = None
        elif tag == "thead":
            self._in_head = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _html_missing(html: str) -> list[str]:
    """Per table of ``html`` with missing cells: "N cells (in columns a, b)"."""
    parser = _Tables()
    parser.feed(html)
    found = []
    for table in parser.tables:
        columns: dict[str, int] = {}
        for row in table["rows"]:
            for i, cell in enumerate(row):
                if cell in MISSING:  # named by the first header row naming its position (pandas: the columns)
                    name = next((h[i] for h in table["header"] if i < len(h) and h[i]), f"column {i}")
                    columns[name] = columns.get(name, 0) + 1
        if columns:
            n = sum(columns.values())
            found.append(f"{n} missing-value cell{'s' if n > 1 else ''} ("
                         + ", ".join(f"{k}: {v}" for k, v in columns.items()) + ")")
    return found


def _plain_table(text: str) -> bool:
    """Whether a ``text/plain`` display is a table (a DataFrame or Series printed by pandas), not a
    Python value's repr."""
    lines = [s for s in text.splitlines() if s.strip()]
    return len(lines) >= 2 and not text.lstrip().startswith(("'", '"', "[", "(", "{", "<"))


def _texts(out) -> list[str]:
    """The texts an output shows (stream text, every text MIME type of a rich output)."""
    if out.get("output_type") == "stream":
        return [str(out.get("text", ""))]
    if out.get("output_type") in ("display_data", "execute_result"):
        return [str(v) for k, v in out.get("data", {}).items()
                if k.startswith("text/") and k != RECORD_MIME and isinstance(v, str)]
    if out.get("output_type") == "error":
        return [str(out.get("evalue", ""))]
    return []


def _headline_key(text: str) -> str:
    """The part of a headline that identifies it in any output: its first 60 characters, before the
    fast-mode note (a repr may escape quotes, so those are left out)."""
    return text.split(" [", 1)[0][:60].replace("'", "").replace('"', "")


def page_problems(nb) -> list[str]:
    """What a reader of the executed notebook ``nb`` (an nbformat node) would see as a fault of the
    page, one line each naming the cell ("cell 12: ..."; cells counted from 0, markdown included).

    Finds: a displayed table (``text/html``, or a pandas ``text/plain`` without HTML) with a NaN,
    ``<NA>``, None or NaT cell (an empty string is a blank, and clean); an absl or TensorFlow C++ log
    line in any output (``is_log_line``); the words "seed 000" or "seed 004" in markdown or output;
    a headline shown in more than one output. Returns [] for a clean page.
    """
    problems: list[str] = []
    heads = [str(r["text"]).strip() for r in records(nb) if r.get("kind") == "headline" and r.get("text")]
    if len(heads) > 1:
        problems.append(f"{len(heads)} headlines: a page has one")
    shown: dict[str, list[int]] = {h: [] for h in heads}
    for n, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            if m := SEED_NAMES.search(cell.source):
                problems.append(f"cell {n}: markdown says {m.group(0)!r}: name the user instead")
            continue
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            texts = _texts(out)
            for text in texts:
                logs = [s.strip() for s in text.splitlines() if is_log_line(s)]
                if logs:
                    problems.append(f"cell {n}: {len(logs)} log line(s) in the output, e.g. {logs[0][:80]!r}")
                    break
            for text in texts:
                if m := SEED_NAMES.search(text):
                    problems.append(f"cell {n}: the output says {m.group(0)!r}: name the user instead")
                    break
            data = out.get("data", {})
            if "text/html" in data and "<table" in str(data["text/html"]):
                for found in _html_missing(str(data["text/html"])):
                    problems.append(f"cell {n}: a table shows {found}")
            elif out.get("output_type") in ("display_data", "execute_result") and "text/plain" in data:
                text = str(data["text/plain"])
                if _plain_table(text) and (cells := _WORD_MISSING.findall(text)):
                    problems.append(f"cell {n}: a table shows {len(cells)} missing-value cell(s) "
                                    f"({', '.join(sorted(set(cells)))})")
            for head in heads:
                key = _headline_key(head)
                if key and any(key in t.replace("'", "").replace('"', "") for t in texts):
                    shown[head].append(n)
    for head, cells in shown.items():
        if len(cells) > 1:
            where = sorted(set(cells))
            problems.append(f"cell{'s' if len(where) > 1 else ''} {', '.join(map(str, where))}: the headline "
                            f"shown {len(cells)} times ({head[:60]!r}...)")
    return problems
