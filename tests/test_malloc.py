"""lab.allocator: glibc's thresholds, and what TensorFlow's generator op does to them (in a fresh
process, where nothing else has set them)."""

import subprocess
import sys
import textwrap

import pytest

from lab import allocator as malloc

pytestmark = pytest.mark.skipif(not malloc.available(), reason="glibc's malloc only")

#: Whether glibc serves a fresh block of SIZE by mapping it (its chunk header's IS_MMAPPED bit).
MAPPED = textwrap.dedent("""
    import ctypes
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype, libc.malloc.argtypes, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_size_t], [ctypes.c_void_p]

    def mapped(size):
        p = libc.malloc(size)
        flag = ctypes.c_size_t.from_address(p - ctypes.sizeof(ctypes.c_size_t)).value & 2
        libc.free(p)
        return bool(flag)
""")
SIZE = 24 * 1024 * 1024  # over anything a fresh process has freed yet, under glibc's dynamic ceiling (32 MB)


def _mapped(size: int) -> bool:
    scope: dict = {}
    exec(MAPPED, scope)  # noqa: S102  (the same probe the subprocess below runs)
    return scope["mapped"](size)


def test_use_sets_the_thresholds_of_each_state():
    assert malloc.use(malloc.GENERATOR)
    assert _mapped(SIZE) and _mapped(SIZE)  # mapped every time: no dynamic threshold grows past it
    assert malloc.use(malloc.OWN)
    assert not _mapped(SIZE)  # under OWN's 32 MB: from the heap
    assert malloc.OWN.mmap > SIZE > malloc.GENERATOR.mmap


@pytest.mark.parametrize("generator", [False, True])
def test_tensorflow_s_generator_op_freezes_the_thresholds(generator):
    """The assumption the doctor rests on: a process that read a from_generator dataset maps every large
    block (its thresholds no longer grow); one that did not, maps a size once and then keeps it."""
    code = MAPPED + textwrap.dedent(f"""
        import os
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
        import tensorflow as tf
        if {generator}:
            for _ in tf.data.Dataset.from_generator(lambda: iter([1]), output_signature=tf.TensorSpec((), tf.int32)):
                pass
        print(mapped({SIZE}), mapped({SIZE}))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    first, second = out.stdout.split()[-2:]
    assert first == "True"  # a fresh process maps a block this large
    assert second == str(generator)  # ... and then keeps it on the heap, unless the generator froze the threshold

