"""kernel/app.py: the kernel reads shell messages on its main loop and offers no
subshells (a cell's runs belong to that loop), and builds no log records its handlers
would drop."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from flow_kernel.kernel.app import quiet_logger
from tests.kernel.kernel_helpers import TIMEOUT, execute, start


def test_no_subshells_offered_and_a_create_request_answered_with_an_error() -> None:
    with tempfile.TemporaryDirectory() as folder:
        km, kc = start(Path(folder), live_view=False)
        try:
            info = kc.kernel_info(reply=True)["content"]
            assert "kernel subshells" not in info["supported_features"]
            request = kc.session.msg("create_subshell_request", {})
            kc.control_channel.send(request)
            reply = kc.control_channel.get_msg(timeout=TIMEOUT)
            assert reply["parent_header"]["msg_id"] == request["header"]["msg_id"]
            assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "SubshellsUnsupported"
            cell = execute(kc, "6 * 7")  # the shell, read on the main loop, still answers
            assert cell.status == "ok" and cell.result == "42"
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)


def test_quiet_logger_takes_the_lowest_level_a_handler_prints() -> None:
    logger = logging.getLogger("flow-test-quiet-logger")
    logger.setLevel(logging.DEBUG)
    warning, error = logging.StreamHandler(), logging.StreamHandler()
    warning.setLevel(logging.WARNING)
    error.setLevel(logging.ERROR)
    logger.addHandler(warning)
    logger.addHandler(error)
    try:
        quiet_logger(logger)
        assert logger.level == logging.WARNING and not logger.isEnabledFor(logging.DEBUG)
        debug = logging.StreamHandler()  # `--debug`: a handler that prints everything
        debug.setLevel(logging.DEBUG)
        logger.addHandler(debug)
        logger.setLevel(logging.DEBUG)
        quiet_logger(logging.LoggerAdapter(logger, {}))
        assert logger.level == logging.DEBUG
    finally:
        for handler in list(logger.handlers):
            logger.removeHandler(handler)


def test_a_logger_without_handlers_is_left_as_it_is() -> None:
    logger = logging.getLogger("flow-test-quiet-logger-bare")
    logger.setLevel(logging.DEBUG)
    quiet_logger(logger)
    assert logger.level == logging.DEBUG
