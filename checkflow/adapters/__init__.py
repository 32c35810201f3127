"""Protocol adapters: each subpackage serves a host over one agent protocol.

An adapter stands only on the public hosting seam (``checkflow.hosting``) and the public
engine and agent names. This package must never import an adapter's optional dependencies,
and no adapter may import another.
"""
