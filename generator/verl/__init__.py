"""Facts about verl itself: its entries and config names (constants), release numbers, what each
release does with a config, where its code lies on disk (found without importing it).
"""
