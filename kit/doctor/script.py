"""``python -m kit doctor run [--max-seconds S] [--json FILE] [--continue] SCRIPT [ARGS...]`` (or ``-m MODULE``).

Runs the script unchanged as ``__main__`` with the doctor's hooks (``kit.doctor.run``) installed first. At
its first ``model.fit`` the doctor diagnoses what the fit was given and prints the report; then the script
ends (exit 0), or with ``--continue`` its fit runs as written. A custom loop over a ``tf.data.Dataset``
has its input wait timed on the training thread instead. The doctor's flags come before SCRIPT;
everything after SCRIPT is the script's own.
"""

from __future__ import annotations

import _thread
import argparse
import json
import math
import os
import runpy
import sys
import threading
import time
import traceback
from pathlib import Path

from kit.doctor import fresh
from kit.doctor.run import Fit, Hooks, diagnose_fit, place, validation
from kit.util import OneLineParser, positive_float

#: Seconds the doctor waits, past its budget, for a script stopped in C code to end before it exits anyway.
EXIT_GRACE_S = 5.0
#: What a custom loop that began within the wait may take past the budget to be timed (its report, a
#: dataset's diagnosis, included) before the watchdog stops the script.
LOOP_GRACE_S = 15.0


class _End(BaseException):
    """Raised through the user's script to end it once the doctor has reported (not an ``Exception``,
    so that the script's own ``except Exception`` does not catch it)."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def parse(argv):
    p = OneLineParser(
        prog="python -m kit doctor run",
        description="Run your training script unchanged and diagnose its first model.fit (or time the "
                    "input waits of its custom loop). The doctor's flags come before SCRIPT; the rest is the script's.")
    p.add_argument("--max-seconds", type=positive_float, default=120.0,
                   help="the measuring budget in seconds (default 120); the script's own set-up before its "
                        "first fit is not counted (--wait-seconds bounds it), nor the fit's first batch and the "
                        "model's copy (up to the budget again; three times it while the copy compiles its first "
                        "step), nor its run again in a fresh process (see --no-rerun)")
    p.add_argument("--wait-seconds", type=positive_float, default=None,
                   help="how long the script may run before its first fit or training loop (default: the "
                        "--max-seconds budget); past it the doctor stops the script and says where it was")
    p.add_argument("--json", default=None, help="write the report as JSON to FILE (- for stdout)")
    p.add_argument("--continue", dest="cont", action="store_true",
                   help="after the report, let the script's own fit run as written (default: end the script)")
    p.add_argument("--no-rerun", dest="rerun", action="store_false",
                   help="where Keras reads the fit's input through TensorFlow's generator op (a PyDataset, a "
                        "generator), do not run the script again in a fresh process to time the model's step "
                        "there: the compute ceiling is timed in this process only")
    p.add_argument("--details", action="store_true", help="print each finding's evidence and basis")
    p.add_argument("--debug", action="store_true", help="on an error, show the full traceback")
    p.add_argument("-m", dest="module", default=None, help="run a module as `python -m MODULE` does")
    p.add_argument("script", nargs="?", help="your training script")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    a = p.parse_args(argv)
    if a.module is not None and a.script is not None:
        a.args = [a.script, *a.args]
        a.script = None
    if (a.module is None) == (a.script is None):
        p.error("give SCRIPT or -m MODULE")
    if a.script is not None and not Path(a.script).is_file():
        p.error(f"{a.script}: no such file")
    return a


class Session:
    """One run of the script under the doctor: what it reports, how it ends."""

    def __init__(self, a):
        self.a = a
        self.name = a.script or a.module
        self.started = time.monotonic()
        self.done = threading.Event()  # set once the script trained (fit or loop) or ended
        self.finished = threading.Event()  # set once main() has ended the script
        self.wait = a.wait_seconds or a.max_seconds
        self.loops = None  # the custom-loop hooks (loop.LoopHooks), once installed
        self.cwd = os.getcwd()
        self.child = bool(os.environ.get(fresh.ENV))  # the child that times the ceiling in a fresh process
        self.report: dict = {"script": self.name, "argv": a.args, "max_seconds": a.max_seconds}

    # --- fit -------------------------------------------------------------------------------------
    def on_fit(self, call: Fit, run):
        self.done.set()
        from kit.doctor.cli import OverBudget, Stuck  # noqa: PLC0415

        if self.child:  # the script run again by fresh.ceiling_in_child: the ceiling, then the end
            self.report.update({"ended": "fresh ceiling", "fresh": fresh.child_ceiling(call, self.a.max_seconds)})
            self.write()
            raise _End(0)
        print(f"kit doctor: {call.describe()}; diagnosing a copy for up to {self.a.max_seconds:g} s", flush=True)
        budget, ceiling, why = self.a.max_seconds, None, ""
        if self.a.rerun and fresh.reads_generator(call) and fresh.glibc():
            setup_s = time.monotonic() - self.started
            fresh.as_the_fit_would()
            print("kit doctor: Keras reads this input through TensorFlow's generator op, which sets the process's "
                  "malloc thresholds: the script runs again in a fresh process to time the model's step there", flush=True)
            t_child = time.perf_counter()
            ceiling, why = fresh.ceiling_in_child(self.a.script, self.a.module, self.a.args, max_seconds=budget,
                                                  setup_s=setup_s, cwd=self.cwd)
            self.report["fresh_s"] = time.perf_counter() - t_child
            print(f"kit doctor: the fresh process ran for {self.report['fresh_s']:,.1f} s (the script's set-up "
                  f"{setup_s:,.1f} s here)" + (f"; {why}" if why else ""), flush=True)
        t0 = time.perf_counter()
        try:
            d, note = diagnose_fit(call, max_seconds=budget, fresh=ceiling)
            if why:
                note = "; ".join(filter(None, [note, f"the compute ceiling was timed in this process only: {why}"]))
        except OverBudget as e:  # slow, not stuck: what was measured, and what was left out
            print(f"kit doctor: {e}\n{e.partial}", flush=True)
            from kit.doctor import progress  # noqa: PLC0415

            self.report.update({"ended": "over budget", "fit": call.where, "input": call.kind, "message": str(e),
                                "verdict": (progress.verdict_so_far() or (None,))[0], **progress.found_lists(),
                                "partial": e.partial})
            self.write()
            if not self.a.cont:
                raise _End(0) from None
            return run()
        except Stuck as e:
            self.fail(str(e))
        except Exception as e:  # noqa: BLE001  (the user's model or input raised while measured)
            if self.a.debug:
                raise
            from kit.doctor.sources import ModelError, describe_error, user_place  # noqa: PLC0415

            where = user_place(e)
            what = str(e) if isinstance(e, (ModelError, ValueError)) and "the input of" in str(e) else describe_error(e)
            self.fail(f"diagnosing {call.where}: {what}" + (f" (at {where})" if where and where not in what else ""))
        val = None
        try:
            val = validation(call, d, max_seconds=max(1.0, 0.1 * self.a.max_seconds))
        except Exception as e:  # noqa: BLE001  (the training diagnosis stands; validation is said apart)
            from kit.doctor.sources import describe_error  # noqa: PLC0415

            val = {"line": f"validation_data not measured: {describe_error(e)}"}
        if val is not None and val.get("finding") is not None:
            d = d.with_finding(val.pop("finding"))
        seconds = time.perf_counter() - t0
        if note:
            print(f"note: {note}")
        print(d.details() if self.a.details else d)
        if val is not None:
            print(val["line"])
            self.report["validation"] = val
        ready = d.rates.get("ready_s")
        print(f"kit doctor: measured in {seconds:,.1f} s" + (f", {ready:,.1f} s of it the first batch and the model's "
                                                             "copy, before the budget began" if ready else ""), flush=True)
        self.report.update({"ended": "diagnosed", "fit": call.where, "input": call.kind, "note": note,
                            "seconds": seconds, **d.as_dict()})
        self.write()
        if not self.a.cont:
            raise _End(0)
        print("kit doctor: --continue: the script's own fit runs now", flush=True)
        return run()

    # --- custom loops ----------------------------------------------------------------------------
    def on_loop(self, loop) -> None:
        """A custom loop's timings are in: report them, then end the script unless --continue."""
        self.done.set()
        print(f"kit doctor: {loop}", flush=True)
        self.report.update({"ended": "custom loop", **loop.as_dict()})
        self.write()
        if not self.a.cont:
            raise _End(0)

    # --- endings ---------------------------------------------------------------------------------
    def write(self) -> None:
        if self.a.json is None:
            return
        text = json.dumps(self.report, indent=1, default=_jsonable)
        if self.a.json == "-":
            print(text)
        else:
            tmp = Path(self.a.json).with_name(f".{Path(self.a.json).name}.tmp")
            tmp.write_text(text + "\n")
            tmp.replace(self.a.json)

    def fail(self, line: str, code: int = 2):
        """One line on stderr (``kit: error: ...``), the JSON says so, and the script ends with ``code``."""
        print(f"kit: error: {line}", file=sys.stderr, flush=True)
        self.report.update({"ended": "error", "error": line})
        self.write()
        raise _End(code)

    def watchdog(self) -> None:
        """Stops a script that has neither fitted nor looped within the budget, naming where it was."""
        if self.done.wait(self.wait):
            return
        loop = getattr(self.loops, "loop", None)
        if loop is not None and self.done.wait(self.a.max_seconds + LOOP_GRACE_S):
            # A custom loop had begun (its first steps may trace a large model for longer than the wait):
            # the budget is for timing it, and it reported within the budget and a margin.
            return
        frame = sys._current_frames().get(threading.main_thread().ident or 0)
        mine = None
        while frame is not None and mine is None:  # the innermost user frame of the main thread
            if os.path.abspath(frame.f_code.co_filename).endswith(os.path.basename(self.name or "")) or \
                    frame.f_code.co_filename == str(self.a.script):
                mine = frame
            frame = frame.f_back
        at = f"; it was at {place(mine)}" if mine is not None else ""
        if loop is not None:  # begun, but too few steps ended within the budget to time it
            from kit.doctor.loop import MIN_STEPS  # noqa: PLC0415

            line = (f"{self.name}'s training loop at {loop.where} began, and {len(loop.waits) + 1} of its steps ended "
                    f"within the budget ({self.a.max_seconds:g} s and {LOOP_GRACE_S:g} s more; the loop is timed over "
                    f"at least {MIN_STEPS}){at}: its steps are slower than the budget allows; a larger --max-seconds "
                    "times them. The doctor stopped the script")
        else:
            line = (f"{self.name} did not call model.fit or iterate a tf.data.Dataset in its first "
                    f"{self.wait:g} s (--wait-seconds){at}: the doctor waited for a fit or a "
                    f"training loop, and stopped the script (a loop inside a tf.function is not measurable)")
        print(f"kit: error: {line}", file=sys.stderr, flush=True)
        self.report.update({"ended": "over budget" if loop is not None else "no training", "error": line})
        self.write()
        self.done.set()
        _thread.interrupt_main()  # KeyboardInterrupt in the script, which main() below turns into exit 2
        if not self.finished.wait(EXIT_GRACE_S):
            sys.stdout.flush()
            os._exit(2)  # the script is in C code that does not see the interrupt


def _jsonable(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return str(v)


def main(argv=None) -> int:
    """The command; returns its exit status: 0 reported, 2 an error (one line), else the script's own."""
    a = parse(argv)
    session = Session(a)
    from kit.doctor.loop import LoopHooks  # noqa: PLC0415  (imports TensorFlow)

    hooks = Hooks(session.on_fit).install()
    loops = session.loops = LoopHooks(session.on_loop, max_seconds=a.max_seconds).install().install_steps()
    threading.Thread(target=session.watchdog, name="kit-doctor-watchdog", daemon=True).start()
    argv0 = sys.argv
    path0 = list(sys.path)
    try:
        if a.script is not None:
            sys.argv = [a.script, *a.args]
            sys.path.insert(0, str(Path(a.script).resolve().parent))
            runpy.run_path(a.script, run_name="__main__")
        else:
            sys.argv = [a.module, *a.args]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(a.module, run_name="__main__", alter_sys=True)
        if loops.loop is not None and not loops.reported:  # the loop ended before its budget share
            loops.check(loops.loop, loops.dataset, ended=True)
    except _End as e:
        return e.code
    except KeyboardInterrupt:
        return 2 if session.report.get("ended") in ("no training", "over budget") else 130
    except SystemExit as e:  # the script's own exit
        if not session.done.is_set() and e.code in (0, None):
            print(f"kit: error: {session.name} exited before it called model.fit or iterated a dataset",
                  file=sys.stderr)
            return 2
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except Exception as e:  # noqa: BLE001  (the script raised: one line, its file and line)
        if a.debug:
            raise
        tb = traceback.extract_tb(e.__traceback__)
        script = os.path.abspath(a.script) if a.script else None
        mine = [f for f in tb if script and os.path.abspath(f.filename) == script] or \
               [f for f in tb if not f.filename.startswith("<") and "kit/doctor" not in f.filename]
        at = f"{os.path.basename(mine[-1].filename)}:{mine[-1].lineno}" if mine else session.name
        from kit.doctor.sources import describe_error  # noqa: PLC0415

        print(f"kit: error: {at}: {describe_error(e)}; --debug shows the traceback", file=sys.stderr)
        session.report.update({"ended": "error", "error": f"{at}: {describe_error(e)}"})
        session.write()
        return 2
    finally:
        sys.argv = argv0
        sys.path[:] = path0
        hooks.remove()
        loops.remove()
        session.done.set()
        session.finished.set()
    if not session.report.get("ended"):
        print(f"kit: error: {session.name} ended without calling model.fit or iterating a tf.data.Dataset: "
              "nothing to diagnose", file=sys.stderr)
        return 2
    return 0
