"""Reading a launch script without running it: the bash reader (shell/), Python launchers (python/),
the read model (launch_script), Hydra override text, inline suppressions, whether a file looks like
a launcher, fork trainer code.
"""
