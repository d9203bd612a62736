"""The bash reader: tree-sitter-bash for structure, a static evaluator for values.

`read_file(path)` / `read_script(text)` return a `generator.launch.LaunchScript`. Nothing in
a script is ever executed; what cannot be known statically is marked `<?label>`.
"""

from generator.shell.reader import read_file, read_script

__all__ = ["read_file", "read_script"]
