"""The package's version, in a module of its own: the golden files' manifests record it, and
the modules that write them import it from here, not from the package's ``__init__`` (whose
lazy attributes reach the top layers)."""

__version__ = "0.1.0"
