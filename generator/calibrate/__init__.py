"""`gen calibrate`: read what a verl run logged and set it beside what the models predicted.

logs.py reads every format verl writes (the console logger's step lines, the file logger's JSON
lines, CSV exports of wandb/tensorboard scalars) into steps of {key: number}; metric_keys.py is
the one table of verl's metric names across releases; summary.py turns the steps into per-phase
medians and peaks; match.py finds the configuration the run used (its start-up config dump, else
the script) and says where the log and the script disagree; compare.py predicts each phase for
it and names the largest miss; fit.py fits per-cluster corrections from the runs compared;
render.py prints it all. docs/calibrate.md.
"""
