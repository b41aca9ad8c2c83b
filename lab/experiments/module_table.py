"""The kit's modules at two commits: line count and the first paragraph of each module's docstring.

    python -m lab.experiments.module_table BEFORE AFTER > modules.md

Issue 32 asked for this list, before and after the modules moved along their concepts.
"""

import ast
import subprocess
import sys

WIDTH = 160  # characters of the docstring's first paragraph kept


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def table(rev: str) -> list[tuple[str, int, str]]:
    """``(path, lines, sentence)`` for every ``kit/**.py`` at ``rev``."""
    rows = []
    for path in _git("ls-tree", "-r", "--name-only", rev, "kit").split():
        if not path.endswith(".py"):
            continue
        src = _git("show", f"{rev}:{path}")
        doc = ast.get_docstring(ast.parse(src)) or ""
        first = " ".join(doc.strip().split("\n\n")[0].split())
        if len(first) > WIDTH:
            first = first[:first.rfind(" ", 0, WIDTH)] + " ..."
        rows.append((path, src.count("\n"), first or "(no docstring)"))
    return rows


def main(before: str, after: str) -> None:
    for rev, title in ((before, "before"), (after, "after")):
        rows = table(rev)
        when = _git("log", "-1", "--format=%h %ad", "--date=short", rev).strip()
        print(f"\n### {title}: {when}, {len(rows)} modules, {sum(r[1] for r in rows):,} lines\n")
        print("| module | lines | what it owns |\n| --- | ---: | --- |")
        for path, n, sentence in rows:
            print(f"| `{path}` | {n:,} | {sentence.replace('|', '/')} |")


if __name__ == "__main__":
    main(*sys.argv[1:3])
