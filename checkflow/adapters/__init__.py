"""Protocol adapters: each subpackage translates one agent protocol onto the hosting seam.

An adapter imports only public ``checkflow.hosting`` names (and the public workflow, agent,
state and error names); it never loads a checkpoint or a session itself and never imports
another adapter. ``python -m checkflow serve --adapters NAME`` imports
``checkflow.adapters.NAME`` and calls its ``default_adapter()``.
"""
