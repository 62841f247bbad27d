"""`python -m flow_kernel.bench [--quick] [--json FILE]`: the same as `flow bench`."""

from __future__ import annotations

import sys

from flow_kernel.bench.suite import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
