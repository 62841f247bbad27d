"""The host side of a run: services the sandbox asks for (agents, operator,
processes, clock), events, and the run engine that compiles, validates and executes."""
