"""A third-party backend package, as an entry point of ``hopindex.backends`` names it.

The tests install it through a ``*.dist-info`` folder (``fixtures.py``): nothing in
``hopindex`` imports it, so the registry can only find it the way it finds any plugin.
"""

from hopindex.backends.plugin import BackendRegistry, BackendRole, BackendSpec
from tests.plugin_backend.memvec import NAME, MemvecSettings, open_memvec

__all__ = ["register"]


def register(registry: BackendRegistry) -> None:
    registry.add(BackendSpec(name=NAME, role=BackendRole.VECTORS, schemes=("memvec",),
                             opener=open_memvec, settings_type=MemvecSettings))
