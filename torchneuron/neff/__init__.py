"""neff stage."""
