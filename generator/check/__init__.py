"""The work behind `gen check` and `gen explain`, one file at a time."""
