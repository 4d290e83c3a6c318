"""Environments behind small protocols (ALFWorld, coding, ...)."""
