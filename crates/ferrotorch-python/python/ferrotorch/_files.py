"""Handing whole files' bytes to and from binary file objects without
copying them where CPython allows it.

Note [Handing bytes to a BytesIO]
---------------------------------
``save`` into an ``io.BytesIO`` is the usual way to keep a program or a
state dict in memory (to send it, to hash it, to load it again). Writing a
46 MB program into an empty ``BytesIO`` copies it into a fresh buffer: on
the machines here that is 22 ms of first-touch page faults and copying,
twice what encoding it took. CPython's ``BytesIO.__init__`` instead adopts
an exact ``bytes`` object as its buffer (it copies only when the buffer is
written again), and ``getvalue()`` hands its buffer back without a copy
when the buffer is exactly its size. So:

- ``write_bytes`` re-initialises an *empty* plain ``io.BytesIO`` (nothing
  written, position 0) with the bytes and moves to their end: the same
  state ``f.write(data)`` leaves, with no copy. Any other file object, a
  non-empty ``BytesIO`` or a subclass (whose ``__init__`` may do anything)
  is written with ``f.write`` as before.
- ``read_rest`` returns the rest of a ``BytesIO`` from its position as a
  ``memoryview`` over ``getvalue()`` (no copy; ``getbuffer()`` would copy
  an adopted buffer before exporting it) and leaves the position at the
  end, as ``read()`` does; other file objects are ``read()``.
"""

import io


def write_bytes(f, data):
    """``f.write(data)`` for a whole file's ``bytes``; an empty
    ``io.BytesIO`` adopts them (Note [Handing bytes to a BytesIO])."""
    if type(f) is io.BytesIO and type(data) is bytes and not f.closed:
        pos = f.tell()
        end = f.seek(0, io.SEEK_END)
        if pos == 0 and end == 0:
            try:
                f.__init__(data)
            except BufferError:
                pass  # a live export of its buffer: write as usual
            else:
                f.seek(0, io.SEEK_END)
                return len(data)
        f.seek(pos)
    return f.write(data)


def read_rest(f):
    """The rest of a binary file object from its position (``f.read()``),
    a BytesIO's without a copy (Note [Handing bytes to a BytesIO])."""
    if isinstance(f, io.BytesIO) and not f.closed:
        pos = f.tell()
        whole = f.getvalue()
        f.seek(0, io.SEEK_END)
        return memoryview(whole)[pos:]
    return f.read()
