"""Python launchers: a `.py` file that runs verl (`compose(overrides=[...])`, a subprocess list),
and the `@hydra.main` of a Hydra entry module. Read statically, never imported or run.

One package beneath the shell reader, which hands it every `.py` (shell/script_reader.read_launch
dispatches by file type): chunks.py checks and cuts the source before a parse (depth, size),
hydra_main.py reads `@hydra.main` with the standard library's `ast`, override_lists.py reads the
override lists with libcst into a LaunchScript and places edits in them. It imports nothing
above itself (not the shell reader, not config/, not fix/).

Import from the module that has the function: this face re-exports nothing, so that a check of
a shell script, which only asks hydra_main where an entry module is, does not load the
override-list reader (~2 ms of `gen check`'s start).
"""
