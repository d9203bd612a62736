"""The bash reader: tree-sitter-bash for structure, a static evaluator for values.

`read_launch(path, env=…, args=…)` returns a `generator.launch.LaunchScript` for a shell
script or a Python launcher; every command reads through it (`read_file` / `read_script` are
the shell reader under it). Nothing in
a script is ever executed; what cannot be known statically is marked `<?label>`.
"""

from generator.shell.launch_reader import read_file, read_launch, read_script

__all__ = ["read_file", "read_launch", "read_script"]
