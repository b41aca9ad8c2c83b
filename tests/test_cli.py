"""``python -m kit``: ``--help`` is written for people (every command and option says what it is), and
a bad value is one ``kit: error:`` line naming the option, exit 2 (issue 13, item 12)."""

import argparse
import json
import subprocess
import sys

import pytest
from helpers import kit_cli, one_error_line

from kit.cli import build_parser
from kit.store.folder import MANIFEST


def _walk(parser, path="python -m kit"):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, f"{path} {name}")


def test_every_command_and_option_has_a_help_line():
    missing, raw = [], []
    for path, parser in _walk(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {c.dest: c.help for c in action._choices_actions}
                missing += [f"{path} {name}" for name in action.choices if not helps.get(name)]
            elif not isinstance(action, argparse._HelpAction) and not action.help:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
        text = parser.format_help()
        if "``" in text or "Args:" in text or "Returns:" in text:  # a docstring pasted as help
            raw.append(path)
    assert not missing, f"options without a help line: {missing}"
    assert not raw, f"help texts that are raw docstrings: {raw}"
    assert len(list(_walk(build_parser()))) > 20  # the walk reached the subcommands


def test_the_rounds_options_say_what_a_round_is():
    parser = build_parser()
    for argv in (["bench", "spectrogram"], ["bench", "compare"], ["bench", "segmentation"]):
        sub = dict(_walk(parser))["python -m kit " + " ".join(argv)]
        rounds = next(a for a in sub._actions if "--rounds" in a.option_strings)
        assert "round" in rounds.help and "default" in rounds.help


@pytest.mark.parametrize("name", ["scale", "digest", "timer"])
def test_the_labs_instruments_are_not_bench_commands(name, capsys):
    """``bench scale``, ``digest`` and ``timer`` left the product for ``lab/`` (``python -m lab.NAME``)."""
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["bench", name])
    assert e.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_top_level_help_runs_and_names_the_commands():
    out = subprocess.run([sys.executable, "-m", "kit", "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0
    for command in ("samples", "convert", "verify", "bench", "doctor", "demo", "cache"):
        assert command in out.stdout


@pytest.mark.slow
@pytest.mark.parametrize("args, says", [
    (["samples", "spectrogram", "--out", "/dev/null/x", "--files", "1", "--frames-per-file", "1"],
     "/dev/null"),
    (["convert", "spectrogram", "--index", "DATA", "--to", "memmap", "--out", "/dev/null/x"], "/dev/null"),
    (["convert", "spectrogram", "--index", "FOLDER", "--to", "memmap", "--out", "OUT"], "directory"),
    (["convert", "spectrogram", "--index", "DATA", "--to", "tfrecord", "--out", "OUT", "--shard-mb", "0"],
     "--shard-mb: must be a positive number, got 0"),
    (["convert", "spectrogram", "--index", "DATA", "--to", "tfrecord", "--out", "OUT", "--seed", "-1"],
     "--seed: must be non-negative, got -1"),
    (["convert", "spectrogram", "--index", "DATA", "--to", "tfrecord", "--out", "OUT", "--workers", "0"],
     "--workers: must be positive"),
    (["samples", "spectrogram", "--out", "OUT", "--files", "1", "--frames-per-file", "1", "--seed", "-1"],
     "--seed: must be non-negative, got -1"),
    (["bench", "scaling", "--steps", "0"], "--steps: must be positive, got 0"),
    (["bench", "scaling", "--rounds", "0"], "--rounds: must be positive, got 0"),
    (["bench", "transfer", "--batch-size", "0"], "--batch-size: must be positive, got 0"),
    (["bench", "spectrogram", "--batches", "0"], "--batches: must be positive, got 0"),
    (["bench", "spectrogram", "--generator-seconds", "-1"], "--generator-seconds: must be a positive number"),
    (["service", "dispatcher", "--port", "70000"], "--port: must be a port in 1..65535"),
    (["service", "dispatcher", "--port", "0"], "--port: must be a port in 1..65535"),
    (["service", "dispatcher", "--worker-timeout-s", "-5"], "--worker-timeout-s: must be a positive"),
    (["service", "worker", "--dispatcher", "localhost:5000", "--port", "0"], "--port: must be a port in 1..65535"),
    (["service", "worker", "--dispatcher", "localhost:5000", "--port", "70000"], "--port: must be a port in 1..65535"),
    (["service", "dispatcher", "--bind", "192.0.2.1"], "bind: '192.0.2.1' is not an address of this machine"),
    (["service", "worker", "--dispatcher", "192.0.2.1:5000"], "a worker reached at 127.0.0.1 (--bind 127.0.0.1) "
                                                               "cannot serve the dispatcher at 192.0.2.1:5000"),
    (["service", "worker", "--dispatcher", "localhost:5000", "--port", "-1"], "--port: must be a port in 1..65535"),
    (["service", "worker", "--dispatcher", "localhost:5000", "--heartbeat-s", "0"], "--heartbeat-s: must be a"),
])
def test_cli_bad_values_get_one_line_and_exit_2(spec, tmp_path, args, says):
    """Item 12: tracebacks and silently altered values become `kit: error:` naming the option, exit 2."""
    subs = {"DATA": str(spec.csv_path), "FOLDER": str(spec.csv_path.parent), "OUT": str(tmp_path / "o")}
    r = kit_cli(*[subs.get(a, a) for a in args])
    assert says in one_error_line(r)
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_cli_verify_on_a_malformed_manifest(tmp_path):
    """Item 12: verify on a manifest that is not valid JSON, or lacks fields: one line, exit 2."""
    (tmp_path / MANIFEST).write_text("{not json")
    assert "not valid JSON" in one_error_line(kit_cli("verify", str(tmp_path)))
    (tmp_path / MANIFEST).write_text(json.dumps({"kind": "x", "shards": "all"}))
    assert "malformed manifest" in one_error_line(kit_cli("verify", str(tmp_path)))
    (tmp_path / MANIFEST).write_text(json.dumps({"kind": "x", "key": "k", "count": 1,
                                                       "shards": [{"name": "a"}]}))
    assert "malformed manifest" in one_error_line(kit_cli("verify", str(tmp_path)))
