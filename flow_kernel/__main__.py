"""`python -m flow_kernel -f CONNECTION_FILE` starts the Flow kernel (what kernel.json
runs); `python -m flow_kernel install [...]` installs its kernel spec."""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if argv[:1] == ["install"]:
        from flow_kernel.kernel.install import main as install

        return install(argv[1:])
    from ipykernel.kernelapp import IPKernelApp

    from flow_kernel.kernel.kernel import FlowKernel

    IPKernelApp.launch_instance(argv=argv, kernel_class=FlowKernel)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
