"""Python launchers: a `.py` file that runs verl (`compose(overrides=[...])`, a subprocess list),
and the `@hydra.main` of a Hydra entry module. Read statically, never imported or run.

One package beneath the shell reader, which hands it every `.py` (shell/reader.read_launch
dispatches by file type): chunks.py checks and cuts the source before a parse (depth, size),
hydra_main.py reads `@hydra.main` with the standard library's `ast`, override_lists.py reads the
override lists with libcst into a LaunchScript and places edits in them. It imports nothing
above itself (not the shell reader, not config/, not fix/).
"""

from generator.pylaunch.hydra_main import EntryConfig, HydraMain, entry_config, find_entry_file, read_hydra_main
from generator.pylaunch.override_lists import (
    PY_QUOTING,
    PyOverride,
    PyOverrideList,
    insertion_for,
    key_edits_to_text_edits,
    py_requote,
    read_launcher,
    read_override_lists,
)

__all__ = ["EntryConfig", "HydraMain", "PY_QUOTING", "PyOverride", "PyOverrideList", "entry_config",
           "find_entry_file", "insertion_for", "key_edits_to_text_edits", "py_requote", "read_hydra_main",
           "read_launcher", "read_override_lists"]
