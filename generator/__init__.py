"""verl-gen: write, check and repair launch scripts for verl."""

__version__ = "0.1.0"
