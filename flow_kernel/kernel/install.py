"""`python -m flow_kernel install [--user | --sys-prefix | --prefix DIR]`: put the Flow
kernel spec where Jupyter looks. `pip install` already does it (the spec is wheel shared
data in `share/jupyter/kernels/flow`); this is for other environments and prefixes."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

SPEC_DIR = Path(__file__).parent / "spec"
KERNEL_NAME = "flow"


def install(user: bool = False, prefix: str | None = None) -> str:
    from jupyter_client.kernelspec import KernelSpecManager

    return str(KernelSpecManager().install_kernel_spec(str(SPEC_DIR), KERNEL_NAME, user=user, prefix=prefix))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flow_kernel install", description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="for this user (~/.local/share/jupyter)")
    where.add_argument("--sys-prefix", action="store_true", help=f"in this environment ({sys.prefix})")
    where.add_argument("--prefix", metavar="DIR", help="under DIR/share/jupyter")
    args = parser.parse_args(argv)
    prefix = sys.prefix if args.sys_prefix else args.prefix
    try:
        path = install(user=args.user, prefix=prefix)
    except OSError as exc:
        sys.stderr.write(f"flow: cannot install the kernel spec: {exc}\n")
        return 1
    sys.stdout.write(f"installed the Flow kernel spec in {path}\n")
    return 0
