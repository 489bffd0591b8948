"""Placeholder Python dialect module for `stablehlo` (see the package docstring)."""
