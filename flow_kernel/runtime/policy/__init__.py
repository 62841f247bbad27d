"""What a run may do (docs/security.md): trust and grants, host ceilings, the processes a
program may start, and who answers the person's prompts.
"""
