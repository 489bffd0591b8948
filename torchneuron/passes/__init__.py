"""passes stage."""
