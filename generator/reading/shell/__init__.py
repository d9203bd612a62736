"""The bash reader: tree-sitter-bash for structure, a static evaluator for values.

`read_launch(path, env=…, args=…)` returns a `generator.reading.launch_script.LaunchScript` for a shell
script or a Python launcher; every command reads through it (`read_file` / `read_script` are
the shell reader under it). Nothing in
a script is ever executed; what cannot be known statically is marked `<?label>`.
"""

from generator.reading.shell.script_reader import read_file, read_launch, read_script

__all__ = ["read_file", "read_launch", "read_script"]
