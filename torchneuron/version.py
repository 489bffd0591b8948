"""The package version, in one place (the NEFF build string and cache keys read it)."""

__version__ = "0.1.0"
