"""Repairs as minimal byte edits on the user's own text (`gen fix`, `gen migrate`).

  splice.py   apply_edits (back to front, overlaps rejected), requote per quoting context
              (files are written by generator.base.files.write_atomic)
  place.py    a rule's Fix → byte edits where the reader says each value is defined
              (command-line word, variable assignment or `:-` default, array element, string
              piece, Python string literal); new keys go on a new line only where unambiguous
  engine.py   read → check → place → splice → re-read and re-check, to a fixpoint (≤ 3 rounds)
  migrate.py  renames, removals and removed values between two verl releases
  values.py   Hydra text for a value, keeping the user's spelling of booleans
  files.py    the commands' work file by file: read with the project's settings, resolve the
              release, fix or migrate, write atomically; yields one outcome per file

Nothing here prints; generator/report/fix_outcomes.py words each outcome and the CLI prints it. Heavy
modules (the shell reader, the rules, libcst) are imported inside the functions that need them.
"""
