"""kit.notebook.headline: one line, marked in fast mode with what it was measured on."""

from kit import notebook


def test_headline_is_marked_in_fast_mode_only(monkeypatch, capsys):
    monkeypatch.setenv("KIT_FAST", "1")
    line = notebook.headline("memmap: 12,345 frames/s", sample="200 frames")
    assert line == ("memmap: 12,345 frames/s [FAST MODE: 200 frames; a demonstration, not a measurement "
                    "at scale]")
    assert capsys.readouterr().out == line + "\n"
    monkeypatch.delenv("KIT_FAST")
    assert notebook.headline("memmap: 12,345 frames/s", sample="200 frames") == "memmap: 12,345 frames/s"
