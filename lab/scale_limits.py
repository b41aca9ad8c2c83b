"""``python -m lab.scale``'s limits of reading each store cold, read in the same run as its
cold epochs.

Two reads of a store's own files (the memmap store's file, the TFRecord store's shards), each
cold (the files evicted first):

* the disk's sequential read (``lab.pagecache.cache_through``): the kernel asked to bring the
  files into the page cache 16 MB at a time, the next ``READ_AHEAD_CHUNKS`` ahead, nothing
  touched or copied: the disk alone;
* the page-in limit (``lab.pagecache.page_in``): the same, and each page touched once through
  a mapping, nothing else done: the disk and this machine's cost of a page's first touch
  (on a VM whose host backs guest memory only when it is first used, about a CPU-second per
  GB: ``results/NOTES.md``), which every cold reader pays. The cold epochs are held
  against it (``fraction_of_limit``), the disk's read kept in their basis.

Each is read just before and just after the store's cold epochs (the page-in reads nearest
them), the faster of the two the store's limit: a VM's disk can read a file faster each time
it reads it, so a limit read of other files, or far from the epochs in the run, compares the
epochs with a disk in another state.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kit.system.pagecache import evict
from kit.timing.rates import cpu_used
from lab.pagecache import READ_AHEAD_CHUNKS, cache_through, page_in
from lab.scale_data import row
from lab.scale_report import disk_note, reference_cpu_note

__all__ = ["KINDS", "Limits"]

#: Each limit: its name in a row's ``limit``, its rows' variant per store, and how it reads.
KINDS: dict[str, dict[str, Any]] = {
    "disk": {"variant": "disk_sequential_read", "read": cache_through,
             "how": "brought into the page cache cold 16 MB at a time, the next {ahead} asked for ahead, nothing "
                    "copied"},
    "page-in": {"variant": "page_in_limit", "read": page_in,
                "how": "brought into the page cache cold 16 MB at a time, the next {ahead} asked for ahead, and each "
                       "page touched once through a mapping, nothing else done (the disk and the first touch of "
                       "each page)"},
}


class Limits:
    """The reference reads of each store, kept as ``(bytes, seconds, CPU seconds, of which
    in the kernel)`` in ``reads[kind][store]``.

    Args:
        reference: store -> its files (``"memmap"``: its file; ``"tfrecord"``: its shards).
        log: where each read's line goes.
    """

    def __init__(self, reference: dict[str, list[Path]], *, log=print):
        self.reference = reference
        self.log = log
        self.reads: dict[str, dict[str, list[tuple]]] = {kind: {fmt: [] for fmt in reference} for kind in KINDS}

    def read(self, fmt: str, when: str) -> None:
        """Both reads of ``fmt``'s files, cold, ``when`` (``"before"``/``"after"``) its cold
        epochs: before them the disk's then the page-in, after them the page-in then the
        disk's, so that the page-in reads, which the epochs are held against, are nearest."""
        for kind in (("disk", "page-in") if when == "before" else ("page-in", "disk")):
            files = self.reference[fmt]
            evict(files)
            (nbytes, s), _, cpu, kernel = cpu_used(KINDS[kind]["read"], files)
            self.log(f"{kind} read of the {fmt} store (cold, {when} its cold epochs): {nbytes / 1e9:.1f} GB in "
                     f"{s:.1f} s = {nbytes / s / 1e6:,.0f} MB/s ({cpu / s:.2f} CPU-s per s, {kernel / s:.2f} in the "
                     f"kernel)")
            self.reads[kind][fmt].append((nbytes, s, cpu, kernel))

    def fastest(self, kind: str, fmt: str) -> tuple:
        """The faster read of ``kind`` of ``fmt``'s files."""
        return min(self.reads[kind][fmt], key=lambda r: r[1] / r[0])

    def rate(self, kind: str, fmt: str) -> float:
        """The limit of ``kind`` (``"disk"``/``"page-in"``) of ``fmt``'s files: bytes per second."""
        nbytes, s, _, _ = self.fastest(kind, fmt)
        return nbytes / s

    def rows(self, frames: int, dtype: str) -> list[dict]:
        """The limit rows, each read as an epoch: the time its faster read of the store's whole
        file (or shards) took. Variants ``disk_sequential_read``, ``page_in_limit`` (the memmap
        store) and the same with ``_tfrecord``."""
        out = []
        for kind, k in KINDS.items():
            for fmt, files in self.reference.items():
                reads = self.reads[kind][fmt]
                if not reads:
                    continue
                nbytes, s, cpu, kernel = self.fastest(kind, fmt)
                what = (f"{nbytes / 1e9:.2f} GB of {files[0].name}, the {fmt} store's file" if len(files) == 1
                        else f"{nbytes / 1e9:.2f} GB of the {fmt} store's {len(files)} shards, in order")
                variant = k["variant"] + ("" if fmt == "memmap" else f"_{fmt}")
                out.append(row(
                    variant, "cold", frames, dtype, s, True,
                    f"{what}, {k['how'].format(ahead=READ_AHEAD_CHUNKS)}, the faster of {len(reads)} reads just "
                    f"before and after the {fmt} store's cold epochs "
                    f"({', '.join(f'{r[0] / r[1] / 1e6:,.0f}' for r in reads)} MB/s; {cpu / s:.2f} CPU-s per s, "
                    f"{kernel / s:.2f} in the kernel)", kind, 1.0, cpu / s))
        return out

    def info(self) -> dict:
        """The bench's info on its limits: each store's limit and every read of it (bytes per
        second, CPU seconds per second), and the notes (a store's reads that differ by more
        than ``DISK_UNSTEADY``; a disk read bound by the CPU)."""
        def rates(kind):
            return {fmt: [r[0] / r[1] for r in rs] for fmt, rs in self.reads[kind].items()}

        def cores(kind):
            return {fmt: [r[2] / r[1] for r in rs] for fmt, rs in self.reads[kind].items()}

        def notes(kind, what):
            return "; ".join(f"{fmt} store: {note}" for fmt, rs in rates(kind).items()
                             if (note := disk_note(rs, what))) or None

        return {
            "disk_bytes_per_s": {fmt: self.rate("disk", fmt) for fmt in self.reference},
            "disk_reads_bytes_per_s": rates("disk"),
            "disk_reads_cpu_cores": cores("disk"),
            "disk_note": notes("disk", "the disk's reference reads"),
            "cpu_note": "; ".join(f"{fmt} store: {note}" for fmt, rs in self.reads["disk"].items()
                                  if (note := reference_cpu_note(rs))) or None,
            "page_in_bytes_per_s": {fmt: self.rate("page-in", fmt) for fmt in self.reference},
            "page_in_reads_bytes_per_s": rates("page-in"),
            "page_in_reads_cpu_cores": cores("page-in"),
            "page_in_note": notes("page-in", "the page-in limit's reads"),
        }
