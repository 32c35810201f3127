"""The ``checkflow`` command line: ``serve``, ``checkpoints`` and the storage URLs they take.

The front end of the library, built only on public names of ``checkflow.hosting`` and the
core; it parses arguments, opens stores and prints. This module only re-exports ``main``.
"""

from checkflow.cli._main import main

__all__ = ["main"]
