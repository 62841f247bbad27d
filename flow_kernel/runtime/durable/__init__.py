"""Durable runs (docs/durability.md): the journal, the checkpoint, resume, deadlines on the
person, recorded agent answers, and files opened without following links.
"""
