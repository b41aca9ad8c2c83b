"""``python -m kit ... --help`` is written for people: every command and option says what it is."""

import argparse
import subprocess
import sys

from kit.cli import build_parser


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


def test_top_level_help_runs_and_names_the_commands():
    out = subprocess.run([sys.executable, "-m", "kit", "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0
    for command in ("samples", "convert", "verify", "bench", "doctor", "demo", "cache"):
        assert command in out.stdout
