"""TODO interface."""
