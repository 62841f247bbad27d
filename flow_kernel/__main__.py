"""`python -m flow_kernel -f CONNECTION_FILE` starts the Flow kernel (what kernel.json
runs); `python -m flow_kernel install [...]` installs its kernel spec."""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if argv[:1] == ["install"]:
        from flow_kernel.kernel.install import main as install

        return install(argv[1:])
    from flow_kernel.sandbox.lifetime import make_undumpable

    make_undumpable()  # before any child starts (FlowKernel.start does it again: idempotent)
    # The kernel's first sandbox restores its snapshot while the kernel imports (sandbox/early.py):
    # the command its pool will ask for (SandboxPool's default memory cap).
    from flow_kernel.sandbox.process import start_early

    start_early()
    from flow_kernel.kernel.app import FlowKernelApp
    from flow_kernel.kernel.kernel import FlowKernel

    # ipykernel's application without the shell-channel thread and its unprinted debug
    # records, with stdout/stderr that flush cheaply (kernel/app.py, kernel/iopub.py).
    FlowKernelApp.launch_instance(argv=argv, kernel_class=FlowKernel)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
