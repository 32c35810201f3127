"""Protocol adapters: each subpackage serves a host over one agent protocol.

An adapter stands only on the public hosting seam (``checkflow.hosting``) and the public
engine, agent, state and error names; it never loads a checkpoint or a session itself and
never imports another adapter. ``python -m checkflow serve --adapters NAME`` imports
``checkflow.adapters.NAME`` and calls its ``default_adapter()``. This package must never
import an adapter's optional dependencies.
"""
