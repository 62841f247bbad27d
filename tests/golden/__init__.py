"""Golden comparison (issue 23): today's diagnostics and run results stay byte-identical.

See test_golden.py for what is compared, regen.py for how the golden is made."""
