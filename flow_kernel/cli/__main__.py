"""`python -m flow_kernel.cli ARGS`: the `flow` command."""

import sys

from flow_kernel.cli import main

sys.exit(main())
