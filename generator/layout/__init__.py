"""The parallel layout: the Parallelism and Offload records, a sized candidate, what a caller pins, the
GPU table, and the batch and parallel arithmetic (derive).
"""
