"""What the commands accept as a launch script, which files a folder argument stands for, and one
file's context (settings, text, release, memory options).
"""
