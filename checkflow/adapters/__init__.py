"""Protocol adapters: each subpackage serves a host over one agent protocol.

An adapter translates only. It stands on the public ``checkflow.hosting`` seam (``Host``,
``create_app``, the toolkit) and must never import a private hosting module, load a checkpoint
or a session itself, or import another adapter. ``python -m checkflow serve --adapters NAME``
imports ``checkflow.adapters.NAME`` and calls its ``default_adapter()``.
"""
