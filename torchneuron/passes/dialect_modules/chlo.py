"""Placeholder Python dialect module for `chlo` (see the package docstring)."""
