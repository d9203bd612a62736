"""The project a script belongs to: its root and boundary, and its configuration (`.verl-gen.toml`,
`[tool.verl-gen]`).
"""
