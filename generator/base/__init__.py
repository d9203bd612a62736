"""What every other room stands on: one-line errors and exit codes, the one door for printed bytes, the
run's session and folder memo, the project boundary, the one door for reads and writes, the schema
cache, compiled globs, worker processes, packaged data.
"""
