"""Model providers (runtime.md §4.1): the one table, what every provider takes and gives,
the OpenAI and Anthropic clients, the local providers (`mock`, `scripted`), resilience
and streaming.
"""
