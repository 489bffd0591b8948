"""Placeholder Python dialect module for `vhlo` (see the package docstring)."""
