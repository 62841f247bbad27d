"""Evaluate a workflow over a dataset, or run it over one (a batch): docs/eval.md.

data.py reads the cases, scorers.py scores them, items.py runs one item anywhere,
runner.py drives an eval (results file, resume, summary), api.py is `Session.eval`,
ray_executor.py runs items on a Ray cluster (ray_cluster.py starts a private local one),
report_html.py shows the results.
"""
